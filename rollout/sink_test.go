package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// fataler is the part of testing.TB that rapid.T also has.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// buildStep processes the groups and returns the files of one step.
func buildStep(t fataler, c GroupConfig, groups []GroupInput, trs []GroupTrajectories) (StepFiles, StepCounters) {
	t.Helper()
	var files StepFiles
	var counters StepCounters
	b := SampleBuilder{Run: "run-1", Step: c.Step, PadTokenID: 0}
	for i, g := range groups {
		res, err := ProcessGroup(c, g)
		if err != nil {
			t.Fatal(err)
		}
		counters.Add(res)
		pl, ex, err := b.Build(res, trs[i])
		if err != nil {
			t.Fatal(err)
		}
		files.Planner = append(files.Planner, pl...)
		files.Executor = append(files.Executor, ex...)
		files.Stats = append(files.Stats, res.Stats)
		files.Rollouts = append(files.Rollouts, json.RawMessage(`{"query": `+string(mustJSON(t, g.QueryID))+`, "note": "<a> & b"}`))
	}
	return files, counters
}

func mustJSON(t fataler, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func exampleStep(t fataler) StepFiles {
	groups := []GroupInput{
		{QueryID: "q1", Rollouts: []RolloutRewards{{Main: 1, Subs: []float64{0.9}}, {Main: 0.1, Subs: []float64{0.4, 0.5, 0.1}}}},
		{QueryID: "q2", Rollouts: []RolloutRewards{{Main: 0}, {Main: 0}}},
	}
	trs := []GroupTrajectories{trajectoriesFor(groups[0]), trajectoriesFor(groups[1])}
	files, _ := buildStep(t, cfg(ModeMGRPO, 2, false), groups, trs)
	return files
}

func TestDirSinkWriteStep(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	files := exampleStep(t)
	sink := DirSink{Dir: out, Parquet: true}
	if err := sink.WriteStep(context.Background(), 1, files); err != nil {
		t.Fatal(err)
	}
	dir := StepDir(out, 1)
	if filepath.Base(dir) != "step-000001" {
		t.Fatalf("StepDir = %s", dir)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "step-000001" {
		t.Fatalf("out holds %v, want only step-000001", entries)
	}
	var names []string
	inner, _ := os.ReadDir(dir)
	for _, e := range inner {
		names = append(names, e.Name())
	}
	want := []string{ExecutorFile, ExecutorParquetFile, PlannerFile, PlannerParquetFile, RolloutsFile, StatsFile, StatsParquetFile}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("step dir holds %v, want %v", names, want)
	}

	stats, err := os.ReadFile(filepath.Join(dir, StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	wantFirst := `{"query_id":"q1","main_rewards":[1,0.1],"main_mean":0.55,"main_std":0.45,"d":[1,3],"dbar":2,"sub_rewards":`
	if !bytes.HasPrefix(stats, []byte(wantFirst)) {
		t.Errorf("stats.jsonl starts %q, want %q", stats[:min(len(stats), len(wantFirst))], wantFirst)
	}
	if !bytes.Contains(stats, []byte(`{"query_id":"q2","main_rewards":[0,0],"main_mean":0,"main_std":0,"d":[0,0],"dbar":2,"sub_rewards":[],"sub_mean":0,"sub_std":0}`+"\n")) {
		t.Errorf("stats.jsonl lacks the padded query's line:\n%s", stats)
	}
	rollouts, _ := os.ReadFile(filepath.Join(dir, RolloutsFile))
	if want := `{"query":"q1","note":"<a> & b"}` + "\n" + `{"query":"q2","note":"<a> & b"}` + "\n"; string(rollouts) != want {
		t.Errorf("rollouts.jsonl = %q, want %q", rollouts, want)
	}

	err = sink.WriteStep(context.Background(), 1, files)
	if !errors.Is(err, ErrStepExists) {
		t.Fatalf("second write: %v, want ErrStepExists", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Fatalf("failed write left %d entries", len(entries))
	}
}

func TestDirSinkFailureLeavesNothing(t *testing.T) {
	out := t.TempDir()
	files := exampleStep(t)
	files.Rollouts = append(files.Rollouts, json.RawMessage(`{broken`))
	if err := (DirSink{Dir: out}).WriteStep(context.Background(), 2, files); err == nil {
		t.Fatal("broken rollout JSON: want an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (DirSink{Dir: out}).WriteStep(ctx, 3, exampleStep(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("failed writes left %v", entries)
	}
}

// TestParquetMatchesJSONL reads both encodings back and compares them.
func TestParquetMatchesJSONL(t *testing.T) {
	out := t.TempDir()
	if err := (DirSink{Dir: out, Parquet: true}).WriteStep(context.Background(), 1, exampleStep(t)); err != nil {
		t.Fatal(err)
	}
	checkParquetMatchesJSONL(t, StepDir(out, 1))
}

func checkParquetMatchesJSONL(t fataler, dir string) {
	t.Helper()
	for _, pair := range [][2]string{{PlannerFile, PlannerParquetFile}, {ExecutorFile, ExecutorParquetFile}} {
		j, err := ReadSamplesJSONL(filepath.Join(dir, pair[0]))
		if err != nil {
			t.Fatal(err)
		}
		p, err := ReadSamplesParquet(filepath.Join(dir, pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		if len(j) == 0 && len(p) == 0 {
			continue
		}
		if !reflect.DeepEqual(j, p) {
			t.Fatalf("%s and %s differ:\n%+v\n%+v", pair[0], pair[1], j, p)
		}
	}
	j, err := ReadStatsJSONL(filepath.Join(dir, StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ReadStatsParquet(filepath.Join(dir, StatsParquetFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j, p) {
		t.Fatalf("stats differ:\n%+v\n%+v", j, p)
	}
}

func TestWriteRawJSONLCompactAsGiven(t *testing.T) {
	rows := []json.RawMessage{
		mustJSON(t, map[string]any{"a": []int{1, 2}, "s": "x y\n<&>\u2028", "n": nil}),
		mustJSON(t, "plain"),
		mustJSON(t, []any{1.5, true, map[string]string{"k v": " "}}),
	}
	var compacted, given bytes.Buffer
	if err := writeRawJSONL(&compacted, rows, false); err != nil {
		t.Fatal(err)
	}
	if err := writeRawJSONL(&given, rows, true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(given.Bytes(), compacted.Bytes()) {
		t.Fatalf("json.Marshal output written as given:\n%s\ncompacted:\n%s", given.Bytes(), compacted.Bytes())
	}
}
