package view

import (
	"encoding/json"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestCallLinksAnyToolName checks that a call linked to an executor
// trajectory shows the link whatever its tool's name (a user's agent
// delegates with tools of its own naming through the gateway), and that an
// unlinked call shows none.
func TestCallLinksAnyToolName(t *testing.T) {
	rec := &rollout.TrajectoryRecord{Role: "planner", Steps: []rollout.StepRecord{{Calls: []rollout.CallRecord{
		{Name: "delegate", Arguments: json.RawMessage(`{}`), Executor: 1},
		{Name: "researcher", Arguments: json.RawMessage(`{}`), Executor: 0},
		{Name: "search", Arguments: json.RawMessage(`{}`), Executor: -1},
	}}}}
	v := trajectoryView(rec, "planner", "planner")
	want := []string{"executor-1", "executor-0", ""}
	for i, c := range v.Turns[0].Calls {
		if c.Executor != want[i] {
			t.Errorf("call %s: link %q, want %q", c.Name, c.Executor, want[i])
		}
	}
}
