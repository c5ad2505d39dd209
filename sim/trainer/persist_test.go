package trainer

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPersistedModelsTrainOn: a trainer opened again on the checkpoint
// directory of a persisting one knows its models, answers the replay of
// their last step from the kept futures without training it again, and
// trains the next step on from the saved optimizer state.
func TestPersistedModelsTrainOn(t *testing.T) {
	dir := t.TempDir()
	cfg := withTestDefaults(t, Config{CheckpointDir: dir, Persist: true})
	first := newTestServer(t, cfg)
	model := first.newModel()
	d := newDatum([]int{1, 2, 3, 2}, 1, -1, 1)
	steps := func(ts *testServer, from, n int) (last map[string]any) {
		for i := from; i < from+n; i++ {
			seq := 3*i + 1
			ts.call("forward_backward", fwdBwd(model, seq, "importance_sampling", nil, d))
			last = ts.call("optim_step", optim(model, seq+1, 0.1))
			ts.call("save_weights_for_sampler", map[string]any{"model_id": model, "path": "s" + string(rune('0'+i)), "seq_id": seq + 2, "type": "save_weights_for_sampler"})
		}
		return last
	}
	steps(first, 0, 2)
	params, _ := first.Params(model)
	replayID := first.mustPost("forward_backward", fwdBwd(model, 4, "importance_sampling", nil, d))["request_id"]
	first.Server.Close()

	second, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open on the persisted directory: %v", err)
	}
	ts := wrapTestServer(t, second)
	if got, ok := ts.Params(model); !ok || !slices.Equal(got, params) {
		t.Fatalf("restored parameters %v (%v), want %v", got, ok, params)
	}
	if st, m := ts.post("get_info", map[string]any{"model_id": model, "type": "get_info"}); st != http.StatusOK {
		t.Fatalf("get_info of the restored model: %d %v", st, m)
	}
	again := ts.mustPost("forward_backward", fwdBwd(model, 4, "importance_sampling", nil, d))
	if again["request_id"] != replayID {
		t.Errorf("replay of step 2's forward_backward answered future %v, want the original %v", again["request_id"], replayID)
	}
	if got, _ := ts.Params(model); !slices.Equal(got, params) {
		t.Error("the replay trained again")
	}
	if opt := steps(ts, 2, 1); metric(t, opt, "adam_step") != 3 {
		t.Errorf("the step after the restart is Adam step %v, want 3", metric(t, opt, "adam_step"))
	}

	if err := os.WriteFile(filepath.Join(dir, model, stateFile), []byte(`{"format": "other"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cfg); err == nil {
		t.Error("Open with a state file of another format: no error")
	}
}
