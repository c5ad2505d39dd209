package evalrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/bench"
)

func TestPairOfTrajectory(t *testing.T) {
	items := map[string]int{"q1": 0, "a/b": 1, "a": 2}
	tests := []struct {
		name, key, item string
		run             int
	}{
		{"planner", "eval/q1/1/planner", "q1", 1},
		{"executor", "eval/q1/0/executor/3", "q1", 0},
		{"judge", "eval/q1/2", "q1", 2},
		{"id with a slash", "eval/a/b/1/single", "a/b", 1},
		{"shorter id", "eval/a/4/planner", "a", 4},
		{"unknown id", "eval/zz/0/planner", "", -1},
		{"a rollout's key", "run/1/q1/0/planner", "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item, run := pairOfTrajectory(tt.key, items)
			if item != tt.item || run != tt.run {
				t.Errorf("pairOfTrajectory(%q) = %q, %d; want %q, %d", tt.key, item, run, tt.item, tt.run)
			}
		})
	}
}

func TestLocateEvalMissesKeepsThePairsFirstInItemOrder(t *testing.T) {
	items := []bench.Item{{ID: "b"}, {ID: "a"}}
	got := LocateMisses([]replay.Miss{
		{Role: "planner", Trajectory: "eval/a/0/planner", Turn: 2},
		{Role: "executor", Trajectory: "eval/a/0/executor/0", Turn: 0},
		{Role: "planner", Trajectory: "eval/b/1/planner", Turn: 1},
		{Tool: "search"},
		{Role: "planner", Trajectory: "eval/b/0/planner", Turn: 0},
	}, items)
	want := []struct {
		item string
		run  int
		role string
	}{{"b", 0, "planner"}, {"b", 1, "planner"}, {"a", 0, "planner"}, {"", -1, ""}}
	if len(got) != len(want) {
		t.Fatalf("%d misses %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Item != w.item || got[i].Run != w.run || got[i].Role != w.role {
			t.Errorf("miss %d: %s/%d %s, want %s/%d %s", i, got[i].Item, got[i].Run, got[i].Role, w.item, w.run, w.role)
		}
	}
}

func TestInRecordedOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	replayed := `{"id":"b","run":0,"x":1}` + "\n" + `{"id":"new","run":0}` + "\n" + `{"id":"a","run":1}` + "\n" + `{"id":"a","run":0}` + "\n"
	if err := os.WriteFile(path, []byte(replayed), 0o644); err != nil {
		t.Fatal(err)
	}
	recorded := `{"id":"a","run":0,"x":9}` + "\n" + `{"id":"b","run":0}` + "\n" + `{"id":"a","run":1}` + "\n"
	if err := InRecordedOrder(path, []byte(recorded)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := `{"id":"a","run":0}` + "\n" + `{"id":"b","run":0,"x":1}` + "\n" + `{"id":"a","run":1}` + "\n" + `{"id":"new","run":0}` + "\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
