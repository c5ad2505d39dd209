package farm

import (
	"testing"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/rollout"
)

// TestLocateMissesOfAStreamedStep: a miss of a streamed step's rollout,
// whose trajectory names its draw, is located at the step that took the
// draw; a fixed step's at its own step; the first miss of a rollout is
// kept, in step order.
func TestLocateMissesOfAStreamedStep(t *testing.T) {
	schedule := []ScheduledStep{
		{Units: []rollout.RolloutTask{{Run: "r", Step: 1, QueryID: "q1", K: 0}}},
		{Units: []rollout.RolloutTask{{Run: "r", Step: 7, QueryID: "q2", K: 1}}, Streamed: true, Draws: []int{7}},
	}
	got := locateMisses([]replay.Miss{
		{Role: "executor", Trajectory: "r/7/q2/1/executor/0", Turn: 0},
		{Role: "planner", Trajectory: "r/7/q2/1/planner", Turn: 2},
		{Role: "planner", Trajectory: "r/1/q1/0/planner", Turn: 1},
	}, stepOfRollouts(schedule))
	if len(got) != 2 {
		t.Fatalf("%d misses kept, want 2 (one a rollout): %+v", len(got), got)
	}
	if g := got[0]; g.Step != 1 || g.Draw != 0 || g.Query != "q1" || g.Rollout != 0 {
		t.Errorf("first miss located at %+v, want step 1 query q1 rollout 0", g)
	}
	if g := got[1]; g.Step != 2 || g.Draw != 7 || g.Query != "q2" || g.Rollout != 1 || g.Role != "executor" {
		t.Errorf("second miss located at %+v, want step 2 (draw 7) query q2 rollout 1, the executor's", g)
	}
}
