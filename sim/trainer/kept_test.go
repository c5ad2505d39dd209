package trainer

import (
	"fmt"
	"net/http"
	"testing"
)

// TestOldFuturesAreLetGo: with KeptSteps 2, the futures of a model's
// third-latest step and older leave memory: retrieving one is 410, and so
// is replaying its seq_id, while the latest steps still replay.
func TestOldFuturesAreLetGo(t *testing.T) {
	ts := newTestServer(t, Config{KeptSteps: 2})
	model := ts.newModel()
	type step struct{ fb, opt, save map[string]any }
	var steps []step
	var firstID any
	for i := range 4 {
		seq := 3*i + 1
		st := step{fb: fwdBwd(model, seq, "importance_sampling", nil, newDatum([]int{1, 2, 3}, 1, -1, 1)),
			opt:  optim(model, seq+1, 0.1),
			save: map[string]any{"model_id": model, "path": fmt.Sprintf("step-%d", i+1), "seq_id": seq + 2, "type": "save_weights_for_sampler"}}
		id := ts.mustPost("forward_backward", st.fb)["request_id"]
		if i == 0 {
			firstID = id
		}
		ts.result(id)
		ts.call("optim_step", st.opt)
		ts.call("save_weights_for_sampler", st.save)
		steps = append(steps, st)
	}
	if st, m := ts.post("retrieve_future", map[string]any{"request_id": firstID}); st != http.StatusGone {
		t.Errorf("retrieve a future of step 1 after 4 steps: status %d %v, want 410", st, m)
	}
	if st, m := ts.post("forward_backward", steps[0].fb); st != http.StatusGone {
		t.Errorf("replay step 1's forward_backward: status %d %v, want 410", st, m)
	}
	if st, m := ts.post("forward_backward", steps[3].fb); st != http.StatusOK {
		t.Errorf("replay step 4's forward_backward: status %d %v, want its future", st, m)
	}
	// Steps 3 and 4 keep their 3 futures each (create_model's is not a
	// model's sequenced request and stays).
	if n := ts.KeptFutures(); n > 2*3+1 {
		t.Errorf("%d futures kept after 4 steps with KeptSteps 2, want at most 7", n)
	}
	if st, m := ts.post("retrieve_future", map[string]any{"request_id": "future_9999"}); st != http.StatusNotFound {
		t.Errorf("retrieve a future never issued: status %d %v, want 404", st, m)
	}
}
