package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// rescoreSimRun writes a small sim run of `mgrpo train` with extra flags.
func rescoreSimRun(t *testing.T, out string, extra ...string) {
	t.Helper()
	args := append([]string{"--log-level", "error", "train", "--sim", "--seed", "5", "--steps", "2", "--batch-size", "3",
		"--group-size", "4", "--out", out}, extra...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("train %v: exit %d: %s", extra, code, stderr)
	}
}

// stepFiles returns the step files of a run directory by relative path.
func stepFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "step-*", "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no step files in %s (%v)", dir, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		out[rel] = []byte(mustRead(t, p))
	}
	return out
}

// TestRescoreUnchangedSettingsIsByteIdentical rescores fixed-seed sim runs
// of the three modes, a streamed and an asynchronous run (whose turns
// carry the policy versions that served them) with their own settings:
// every step file comes out with the same bytes.
func TestRescoreUnchangedSettingsIsByteIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm and the sim trainer")
	}
	runs := []struct {
		name  string
		extra []string
	}{
		{"mgrpo", []string{"--mode", "mgrpo"}},
		{"frozen-sub", []string{"--mode", "frozen-sub"}},
		{"single", []string{"--mode", "single"}},
		{"streamed", []string{"--max-staleness", "1", "--stream-groups"}},
		{"asynchronous", []string{"--max-staleness", "1", "--concurrency", "2"}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			root := t.TempDir()
			from, to := filepath.Join(root, "run"), filepath.Join(root, "rescored")
			rescoreSimRun(t, from, r.extra...)
			code, stdout, stderr := runCLI(t, "--log-level", "error", "rescore", from, "--out", to)
			if code != 0 {
				t.Fatalf("rescore: exit %d: %s", code, stderr)
			}
			want, got := stepFiles(t, from), stepFiles(t, to)
			if len(got) != len(want) {
				t.Errorf("%d step files, want %d", len(got), len(want))
			}
			for name, b := range want {
				if string(got[name]) != string(b) {
					t.Errorf("%s differs after a rescore with unchanged settings", name)
				}
			}
			if !strings.Contains(stdout, "judge: 0 answers asked") {
				t.Errorf("stdout %q: want no judge call", stdout)
			}
			// The new run is a run directory report reads.
			if code, _, stderr := runCLI(t, "report", "--out", filepath.Join(root, "c.svg"), from, to); code != 0 {
				t.Errorf("report OLD NEW: exit %d: %s", code, stderr)
			}
		})
	}
}

// TestRescoreNewRewardsDBarAndSimJudge rescores a sim run with new α/β,
// a new d̄ and the sim judge: the new rewards are the weights applied to
// the new verdicts, every advantage is the reference formula's on them,
// every query has K·d̄ executor entries; a second rescore with the same
// judge asks it nothing.
func TestRescoreNewRewardsDBarAndSimJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm and the sim")
	}
	root := t.TempDir()
	from, to, again := filepath.Join(root, "run"), filepath.Join(root, "new"), filepath.Join(root, "again")
	rescoreSimRun(t, from, "--dbar", "4")
	cfg := filepath.Join(root, "w.yaml")
	if err := os.WriteFile(cfg, []byte("rewards:\n  alpha1: 0.3\n  alpha2: 0.7\n  beta1: 0.2\n  beta2: 0.2\n  beta3: 0.6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--log-level", "error", "rescore", from, "--out", to, "--config", cfg, "--dbar", "2", "--judge-url", "sim"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("rescore: exit %d: %s", code, stderr)
	}
	asked := regexp.MustCompile(`judge: (\d+) answers asked`).FindStringSubmatch(stdout)
	if asked == nil || asked[1] == "0" {
		t.Fatalf("stdout %q: want the judge asked", stdout)
	}
	w := rollout.RewardWeights{Alpha1: 0.3, Alpha2: 0.7, Beta1: 0.2, Beta2: 0.2, Beta3: 0.6}
	for step := 1; step <= 2; step++ {
		checkRescoredStep(t, to, step, w, 4, 2)
	}
	code, stdout, stderr = runCLI(t, "--log-level", "error", "rescore", to, "--out", again, "--judge-url", "sim")
	if code != 0 {
		t.Fatalf("second rescore: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "judge: 0 answers asked") {
		t.Errorf("second rescore with the same judge: stdout %q, want no answer asked", stdout)
	}
	for name, b := range stepFiles(t, to) {
		if string(stepFiles(t, again)[name]) != string(b) {
			t.Errorf("%s: the second rescore with the cached judge differs", name)
		}
	}
}

// checkRescoredStep checks one rescored step against the reference: R_M
// and R_S from the records' verdicts and w, advantages by the formula.
func checkRescoredStep(t *testing.T, dir string, step int, w rollout.RewardWeights, K, dbar int) {
	t.Helper()
	sd := rollout.StepDir(dir, step)
	var recs []rollout.RolloutRecord
	for _, line := range strings.Split(strings.TrimSpace(mustRead(t, filepath.Join(sd, rollout.RolloutsFile))), "\n") {
		var r rollout.RolloutRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	planner, err := rollout.ReadSamplesJSONL(filepath.Join(sd, rollout.PlannerFile))
	if err != nil {
		t.Fatal(err)
	}
	executor, err := rollout.ReadSamplesJSONL(filepath.Join(sd, rollout.ExecutorFile))
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	for q := 0; q < len(recs); q += K {
		group := recs[q : q+K]
		query := group[0].Task.QueryID
		main := make([]float64, K)
		subReward := map[rollout.SubRef]float64{}
		for k, r := range group {
			main[k] = w.MainReward(r.Scores.FormatOK, r.Scores.Correct)
			if math.Abs(r.Scores.Main-main[k]) > 1e-12 {
				t.Errorf("step %d %s: R_M %v, want %v", step, r.ID, r.Scores.Main, main[k])
			}
			for i, s := range r.Scores.Subs {
				want := w.SubReward(s.FormatOK, r.Scores.Correct, s.Expert)
				if math.Abs(s.Reward-want) > 1e-12 {
					t.Errorf("step %d %s sub %d: R_S %v, want %v", step, r.ID, i, s.Reward, want)
				}
				if s.ExpertRaw != "" {
					judged++
				}
				subReward[rollout.SubRef{Rollout: k, SubIndex: i}] = s.Reward
			}
		}
		ref := rollouttest.ReferenceAdvantages(main)
		for _, s := range planner {
			if s.QueryID == query && math.Abs(s.Advantage-ref[s.Rollout]) > 1e-9 {
				t.Errorf("step %d %s rollout %d: advantage %v, reference %v", step, query, s.Rollout, s.Advantage, ref[s.Rollout])
			}
		}
		// The aligned entries, in order, one per (rollout, sub_index).
		type entry struct{ k, i int }
		var entries []entry
		var rewards []float64
		seen := map[entry]bool{}
		for _, s := range executor {
			e := entry{s.Rollout, *s.SubIndex}
			if s.QueryID != query || seen[e] {
				continue
			}
			seen[e] = true
			entries = append(entries, e)
			src := rollout.SubRef{Rollout: s.Rollout, SubIndex: *s.SubIndex}
			if s.DuplicateOf != nil {
				src = *s.DuplicateOf
			}
			if s.FinishReason != rollout.FinishReasonPadding {
				if math.Abs(s.Reward-subReward[src]) > 1e-12 {
					t.Errorf("step %d %s entry %v: reward %v, its trajectory's %v", step, query, e, s.Reward, subReward[src])
				}
				rewards = append(rewards, s.Reward)
			}
		}
		if len(entries) != K*dbar {
			t.Errorf("step %d %s: %d executor entries, want K·d̄ = %d", step, query, len(entries), K*dbar)
		}
		subRef := rollouttest.ReferenceAdvantages(rewards)
		j := 0
		for _, s := range executor {
			if s.QueryID != query || s.FinishReason == rollout.FinishReasonPadding {
				continue
			}
			e := entry{s.Rollout, *s.SubIndex}
			if j < len(entries) && entries[j] != e {
				j++
			}
			if math.Abs(s.Advantage-subRef[j]) > 1e-9 {
				t.Errorf("step %d %s entry %v: advantage %v, reference %v", step, query, e, s.Advantage, subRef[j])
			}
		}
	}
	if judged == 0 {
		t.Errorf("step %d: no executor report was judged", step)
	}
}

// TestRescoreRefusesWhatIsNoRun: a directory that is no run, a run of an
// older version and a corrupt store exit 2 and write nothing.
func TestRescoreRefusesWhatIsNoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm")
	}
	root := t.TempDir()
	from := filepath.Join(root, "run")
	rescoreSimRun(t, from, "--steps", "1")
	copyRun := func(name string) string {
		dst := filepath.Join(root, name)
		if err := os.CopyFS(dst, os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	older := copyRun("older")
	os.Remove(filepath.Join(older, "store.db"))
	st, err := sqlite.Open(context.Background(), filepath.Join(older, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateRun(context.Background(), store.RunRecord{ID: "run", Version: store.RunRecordVersion - 1, Config: json.RawMessage(`{}`), Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	corrupt := copyRun("corrupt")
	for _, f := range []string{"store.db-wal", "store.db-shm"} {
		os.Remove(filepath.Join(corrupt, f))
	}
	if err := os.WriteFile(filepath.Join(corrupt, "store.db"), []byte(strings.Repeat("not a database ", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, dir, want string }{
		{"no run", t.TempDir(), "not a run directory"},
		{"older version", older, "another mgrpo version"},
		{"corrupt store", corrupt, "store"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(root, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			code, _, stderr := runCLI(t, "rescore", c.dir, "--out", out)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q: want 2 and %q", code, stderr, c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s written", out)
			}
			left, _ := filepath.Glob(filepath.Join(root, ".out-*"))
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
