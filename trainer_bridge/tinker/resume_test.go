package tinker_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/tinker"
)

func twoChunkConfig() tinker.Config {
	cfg := fastConfig()
	cfg.MaxDatums = 2
	return cfg
}

func stepSamples(step int) []rollout.Sample {
	return []rollout.Sample{sample(8, 1, step*10), sample(6, -1, step*10+1), sample(10, 0.5, step*10+2)}
}

// TestRetryAfterLostAnswer: a step that failed half way is called again
// in the same process; the server answers the repeated requests with the
// original futures and trains nothing twice.
func TestRetryAfterLostAnswer(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), twoChunkConfig(), nil)
	// Futures: 1 create_model, 2 and 3 forward_backward, 4 optim_step.
	f.scriptPollsFor("4", "503", "503", "503", "503")
	b := batch(1, stepSamples(1)...)
	if _, err := tr.Train(context.Background(), b); !errors.Is(err, trainerbridge.ErrUnavailable) {
		t.Fatalf("first Train = %v, want ErrUnavailable", err)
	}
	res, err := tr.Train(context.Background(), b)
	if err != nil {
		t.Fatalf("second Train: %v", err)
	}
	m := f.model("model_1")
	if m.datums != 3 || m.optims != 1 || m.saves != 1 {
		t.Errorf("server ran %d datums, %d optimizer steps, %d saves; want 3, 1, 1", m.datums, m.optims, m.saves)
	}
	fb := f.callsTo("forward_backward")
	if len(fb) != 4 || string(fb[0].raw) != string(fb[2].raw) || string(fb[1].raw) != string(fb[3].raw) {
		t.Errorf("%d forward_backward calls: want both requests sent twice, byte for byte", len(fb))
	}
	if res.Version != 1 || tr.State().SeqID != 4 {
		t.Errorf("version %d, seq %d; want 1 and 4", res.Version, tr.State().SeqID)
	}
	f.check(t)
}

// TestResumeAfterCrash: a process trains step 1, saves its state, dies in
// step 2; a new process restores the state and trains step 2 again with
// the same samples. The server saw every request of step 2 once.
func TestResumeAfterCrash(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	a := mustTrainer(t, srv.URL, testOptions(), twoChunkConfig(), nil)
	ctx := context.Background()
	if _, err := a.Train(ctx, batch(1, stepSamples(1)...)); err != nil {
		t.Fatal(err)
	}
	saved, err := a.ResumeState()
	if err != nil {
		t.Fatal(err)
	}
	// Step 2 dies after its forward_backward requests: optim_step
	// (future 7) never answers.
	f.scriptPollsFor("7", "503", "503", "503", "503")
	if _, err := a.Train(ctx, batch(2, stepSamples(2)...)); err == nil {
		t.Fatal("step 2 succeeded; the script should have failed it")
	}
	a.Close()

	b := mustTrainer(t, srv.URL, testOptions(), twoChunkConfig(), saved)
	if st := b.State(); st.ModelID != "model_1" || st.SessionID != "session_2" {
		t.Errorf("resumed state %+v: want model_1 in a new session", st)
	}
	if n := len(f.callsTo("create_model")); n != 1 {
		t.Errorf("%d models created; the resumed trainer must reuse the first", n)
	}
	if n := len(f.callsTo("get_info")); n != 1 {
		t.Errorf("%d get_info calls, want 1", n)
	}
	res, err := b.Train(ctx, batch(2, stepSamples(2)...))
	if err != nil {
		t.Fatalf("resumed Train: %v", err)
	}
	m := f.model("model_1")
	if m.datums != 6 || m.optims != 2 || m.saves != 2 {
		t.Errorf("server ran %d datums, %d optimizer steps, %d saves; want 6, 2, 2 (each step once)", m.datums, m.optims, m.saves)
	}
	if res.Weights != "tinker://model_1/sampler_weights/run1_planner_step-000002" || res.Version != 2 {
		t.Errorf("result %q v%d", res.Weights, res.Version)
	}

	// A third process restored from the same (stale) state replays
	// step 2 entirely from the server's futures.
	c := mustTrainer(t, srv.URL, testOptions(), twoChunkConfig(), saved)
	again, err := c.Train(ctx, batch(2, stepSamples(2)...))
	if err != nil {
		t.Fatalf("replayed Train: %v", err)
	}
	if m2 := f.model("model_1"); m2.datums != m.datums || m2.optims != m.optims || m2.saves != m.saves || m2.lastSeq != m.lastSeq {
		t.Errorf("a replay ran something: %+v, was %+v", m2, m)
	}
	if again.Weights != res.Weights || again.Metrics["loss:sum"] != res.Metrics["loss:sum"] {
		t.Errorf("replay answered %+v, the step %+v", again, res)
	}
	// The step just trained is answered from the state alone.
	calls := len(f.calls)
	last, err := c.Train(ctx, batch(2, stepSamples(2)...))
	if err != nil || last.Weights != res.Weights || last.Version != res.Version || !maps.Equal(last.Metrics, res.Metrics) {
		t.Errorf("Train of the last step = %+v, %v", last, err)
	}
	if len(f.calls) != calls {
		t.Errorf("Train of the last step sent %d requests", len(f.calls)-calls)
	}
	if _, err := c.Train(ctx, batch(1, stepSamples(1)...)); err == nil {
		t.Error("Train of an older step succeeded")
	}
	f.check(t)
}

// TestReplayWithOtherSamples: a resumed step with different samples
// reuses seq_ids with other bodies; the server's 409 stops it.
func TestReplayWithOtherSamples(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	a := mustTrainer(t, srv.URL, testOptions(), twoChunkConfig(), nil)
	ctx := context.Background()
	saved, _ := a.ResumeState()
	if _, err := a.Train(ctx, batch(1, stepSamples(1)...)); err != nil {
		t.Fatal(err)
	}
	b := mustTrainer(t, srv.URL, testOptions(), twoChunkConfig(), saved)
	other := stepSamples(1)
	other[0].Advantage = 2
	_, err := b.Train(ctx, batch(1, other...))
	if !errors.Is(err, trainerbridge.ErrRejected) || !strings.Contains(err.Error(), "HTTP 409") || !strings.Contains(err.Error(), "reused") {
		t.Fatalf("Train = %v, want ErrRejected with the 409's detail", err)
	}
	if m := f.model("model_1"); m.datums != 3 || m.optims != 1 {
		t.Errorf("server ran %d datums, %d optimizer steps; want 3, 1", m.datums, m.optims)
	}
}

// TestReplayedSaveSkyRL: SkyRL refuses a replayed save as an existing
// checkpoint; the bridge takes the save as done.
func TestReplayedSaveSkyRL(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	f.script("save_weights_for_sampler", 409)
	f.mu.Lock()
	f.submitDetail = "Checkpoint 'run1_planner_step-000001' already exists for model 'model_1'"
	f.mu.Unlock()
	res, err := tr.Train(context.Background(), batch(1, stepSamples(1)...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Weights != "tinker://model_1/sampler_weights/run1_planner_step-000001" {
		t.Errorf("weights %q", res.Weights)
	}
}

func TestResumeGoneModel(t *testing.T) {
	_, srv := newFake(testKey, testModel)
	defer srv.Close()
	o := testOptions()
	t.Setenv(o.APIKeyEnv, testKey)
	tr, err := tinker.New("tinker+"+srv.URL, o, fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	state, _ := json.Marshal(tinker.State{ModelID: "model_9", SeqID: 12, StepsTrained: 4, LastStep: 4})
	if err := tr.Resume(state); err != nil {
		t.Fatal(err)
	}
	err = tr.Start(context.Background())
	if !errors.Is(err, trainerbridge.ErrRejected) || !strings.Contains(err.Error(), "model_9") {
		t.Fatalf("Start = %v, want the missing model reported", err)
	}
}

func TestNothingToTrain(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	pad := rollout.Sample{InputIDs: []int{0}, LossMask: []int8{0}, Logprobs: []float64{0}}
	res, err := tr.Train(context.Background(), batch(5, pad, pad))
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 4 || res.Metrics[tinker.MetricNothingToTrain] != 1 || res.Metrics[tinker.MetricSkippedShort] != 2 {
		t.Errorf("result %+v", res)
	}
	if n := len(f.callsTo("optim_step")); n != 0 {
		t.Errorf("optim_step sent for an empty batch")
	}
}

func TestHeartbeats(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	cfg := fastConfig()
	cfg.HeartbeatInterval = 5 * time.Millisecond
	tr := mustTrainer(t, srv.URL, testOptions(), cfg, nil)
	deadline := time.Now().Add(5 * time.Second)
	for f.heartbeats("session_1") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d heartbeats in 5 s at a 5 ms interval", f.heartbeats("session_1"))
		}
		time.Sleep(time.Millisecond)
	}
	for _, c := range f.callsTo("session_heartbeat") {
		if string(c.raw) != `{"session_id":"session_1","type":"session_heartbeat"}` {
			t.Errorf("heartbeat body %s", c.raw)
		}
	}
	tr.Close()
	after := f.heartbeats("session_1")
	time.Sleep(30 * time.Millisecond)
	if n := f.heartbeats("session_1"); n != after {
		t.Errorf("%d heartbeats after Close", n-after)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	f, srv := newFake(testKey, testModel)
	defer srv.Close()
	f.echoKey = true
	tr := mustTrainer(t, srv.URL, testOptions(), fastConfig(), nil)
	f.scriptPolls("error200")
	_, err := tr.Train(context.Background(), batch(1, stepSamples(1)...))
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("error %v: want the key redacted", err)
	}

	// A wrong key: the server's 401 repeats it.
	o := testOptions()
	t.Setenv(o.APIKeyEnv, "tk-wrong-key-abcdef")
	bad, err := tinker.New("tinker+"+srv.URL, o, fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	err = bad.Start(context.Background())
	if !errors.Is(err, trainerbridge.ErrRejected) || strings.Contains(err.Error(), "tk-wrong-key-abcdef") || !strings.Contains(err.Error(), "401") {
		t.Errorf("Start with a wrong key = %v: want a 401 without the key", err)
	}

	// No key at all: the error says which variable is empty.
	t.Setenv(o.APIKeyEnv, "")
	none, _ := tinker.New("tinker+"+srv.URL, o, fastConfig())
	defer none.Close()
	if err := none.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "$MGRPO_TEST_TINKER_KEY is empty") {
		t.Errorf("Start without a key = %v", err)
	}
}

func TestOpenByScheme(t *testing.T) {
	for _, u := range []string{"tinker+http://127.0.0.1:1", "tinker+https://tinker.example/services/x"} {
		tr, err := trainerbridge.Open(context.Background(), u, testOptions())
		if err != nil {
			t.Fatalf("Open(%s): %v", u, err)
		}
		if _, ok := tr.(*tinker.Trainer); !ok {
			t.Errorf("Open(%s) = %T", u, tr)
		}
		if _, ok := tr.(trainerbridge.Resumer); !ok {
			t.Errorf("Open(%s): not a Resumer", u)
		}
		tr.Close()
	}
	_, err := trainerbridge.Open(context.Background(), "tinker+http://user:pw@host", testOptions())
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("Open with credentials in the URL = %v: want an error without them", err)
	}
}
