package gateway

import (
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestRepeatedCallsGetNewIDs: a model that repeats a tool call word for
// word gets, from the client, the id of the earlier call; the gateway
// answers it with a new id, so an agent framework that keys tool results
// by id (the OpenAI Agents SDK skips a call id it already ran) runs it, and
// the trajectory stays one conversation.
func TestRepeatedCallsGetNewIDs(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	base := o.BaseURLs[RolePlanner]
	msgs := []map[string]any{{"role": "system", "content": "You plan."}, {"role": "user", "content": o.Task.Question}}
	seen := map[string]bool{}
	for turn := 0; turn < 2; turn++ {
		// The fake planner answers every request that does not end on a
		// tool result with the same two delegations, ids d1 and d2.
		answer, err := agentChat(base, msgs, delegateTool)
		if err != nil {
			t.Fatal(err)
		}
		calls, _ := answer["tool_calls"].([]any)
		if len(calls) != 2 {
			t.Fatalf("turn %d: answer %v, want two tool calls", turn, answer)
		}
		msgs = append(msgs, answer)
		for _, c := range calls {
			id, _ := c.(map[string]any)["id"].(string)
			if id == "" || seen[id] {
				t.Errorf("turn %d: tool call id %q, want one no earlier answer had (seen %v)", turn, id, seen)
			}
			seen[id] = true
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": "done"})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": "Once more."})
	}
	close(release)
	tree := <-done
	if n := len(tree.Planner.Turns); n != 2 || len(tree.Planner.Splits) != 0 {
		t.Errorf("planner: %d turns, splits %+v; want 2 turns of one conversation", n, tree.Planner.Splits)
	}
	// The first turn's results came back with the second request; the
	// second's were never sent.
	for _, c := range tree.Planner.Steps[0].Calls {
		if c.Observation != "done" {
			t.Errorf("step 0 call %s: observation %q, want the tool result sent under its id", c.ID, c.Observation)
		}
	}
}
