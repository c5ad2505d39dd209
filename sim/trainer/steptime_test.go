package trainer

import (
	"net/http"
	"testing"
	"time"
)

// TestStepTimeHoldsTheOptimizerStep: with a step time, an optim_step stays
// pending (the long poll answers try again) and the parameters stay put
// until it has passed; a server closed meanwhile fails the step as a
// server error, which a client may send again.
func TestStepTimeHoldsTheOptimizerStep(t *testing.T) {
	ts := newTestServer(t, Config{StepTime: time.Hour, PollTimeout: 10 * time.Millisecond, PollAnswer: PollTryAgain})
	model := ts.newModel()
	ts.call("forward_backward", fwdBwd(model, 1, "importance_sampling", nil, newDatum([]int{1, 2, 3}, 1, -1, 1)))
	before, _ := ts.Params(model)
	id := ts.mustPost("optim_step", optim(model, 2, 0.1))["request_id"]
	st, m := ts.post("retrieve_future", map[string]any{"request_id": id})
	if st != http.StatusOK || m["type"] != "try_again" {
		t.Fatalf("optim_step within its step time: status %d, %v; want try_again", st, m)
	}
	after, _ := ts.Params(model)
	for i := range before {
		if before[i] != after[i] {
			t.Fatal("the parameters moved before the step time passed")
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.Server.Close()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the step time")
	}
}
