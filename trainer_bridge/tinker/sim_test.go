package tinker_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	simtrainer "github.com/mgrpo/mgrpo/sim/trainer"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/tinker"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// simFaults are the faults the sim trainer injects in these tests: every
// kind it has, each one the official SDK's retries survive.
var simFaultsNone = simtrainer.Faults{}

var simFaults = simtrainer.Faults{Rate500: 0.04, Rate503: 0.04, Rate429: 0.02, RateDrop: 0.06, RateFutureExpire: 0.05}

func newSimTrainer(t *testing.T, faults simtrainer.Faults) (*simtrainer.Server, string, simtrainer.Toy) {
	t.Helper()
	pol := simtrainer.Toy{Vocab: 16}
	s := simtrainer.New(simtrainer.Config{
		Policy: pol, BaseModels: []string{testModel}, CheckpointDir: t.TempDir(),
		APIKey: testKey, Seed: 11, Faults: faults,
	})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs.URL, pol
}

// TestTrainsAgainstSimTrainer opens the bridge by URL against the sim
// trainer, with faults injected, and trains a few steps of realistic
// batches with ppo: every step answers the sim's metrics, the parameters
// move and each step's checkpoint is on disk.
func TestTrainsAgainstSimTrainer(t *testing.T) {
	s, url, pol := newSimTrainer(t, simFaults)
	t.Setenv("MGRPO_TEST_SIM_TINKER_KEY", testKey)
	o := trainerbridge.Options{
		Run: "simrun", Role: rollout.RolePlanner, BaseModel: testModel, LoRARank: 8, Seed: 1,
		Loss: trainerbridge.LossPPO, Adam: trainerbridge.AdamParams{LearningRate: 0.05},
		APIKeyEnv: "MGRPO_TEST_SIM_TINKER_KEY",
	}
	ctx := trainertest.Context(t)
	tr, err := trainerbridge.Open(ctx, "tinker+"+url, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer tr.Close()
	if err := tr.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	model := tr.(*tinker.Trainer).State().ModelID
	initial, err := pol.Initial(testModel)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 4; step++ {
		plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: o.Run, Step: step, PolicyVersion: int64(step - 1), Seed: uint64(step)})
		res, err := tr.Train(ctx, plan)
		if err != nil {
			t.Fatalf("step %d: Train: %v", step, err)
		}
		for _, name := range []string{"loss:sum", "clip_fraction:mean", "logprob_diff_abs:mean", "logprob_diff_abs:max", "weighted_tokens:sum", "grad_norm"} {
			if _, ok := res.Metrics[name]; !ok {
				t.Errorf("step %d: metric %s missing from %v", step, name, res.Metrics)
			}
		}
		if w := res.Metrics["weighted_tokens:sum"]; w == 0 || w > res.Metrics[tinker.MetricTokens] {
			t.Errorf("step %d: the sim trained on %v of the %v target tokens sent", step, w, res.Metrics[tinker.MetricTokens])
		}
		if res.Metrics["unmatched_tokens:sum"] != 0 || res.Metrics["adam_step"] != float64(step) {
			t.Errorf("step %d: unmatched %v, adam step %v; want 0 and %d", step, res.Metrics["unmatched_tokens:sum"], res.Metrics["adam_step"], step)
		}
		// The batch's sampler logprobs are synthetic: the trainer's
		// differ, and the sim says so.
		if res.Metrics["logprob_diff_abs:mean"] <= 0 {
			t.Errorf("step %d: logprob_diff_abs:mean %v, want > 0 for synthetic logprobs", step, res.Metrics["logprob_diff_abs:mean"])
		}
		name, ok := strings.CutPrefix(res.Weights, "tinker://"+model+"/sampler_weights/")
		if !ok {
			t.Fatalf("step %d: weights %q, want tinker://%s/sampler_weights/…", step, res.Weights, model)
		}
		if _, err := os.Stat(filepath.Join(s.Config().CheckpointDir, model, name+".json")); err != nil {
			t.Errorf("step %d: checkpoint: %v", step, err)
		}
		if res.Version != int64(step) {
			t.Errorf("step %d: version %d", step, res.Version)
		}
	}
	params, _ := s.Params(model)
	moved := 0.0
	for i := range params {
		d := params[i] - initial[i]
		moved += d * d
	}
	if moved < 1e-6 {
		t.Errorf("parameters moved by %g (squared norm) over 4 steps", moved)
	}
	faults := s.FaultCounts()
	if len(faults) == 0 {
		t.Fatalf("no fault injected: the test proves less than it says; change the seed")
	}
	t.Logf("faults injected: %v; squared parameter change %.4g", faults, moved)
}

// TestConformanceAgainstSimTrainer runs the trainers' conformance suite
// on the tinker backend against the sim trainer, an independent server of
// the API, with faults on. A Tinker trainer reaches its model again
// through the state it saved (the farm stores it with each step), so the
// opener resumes a reopened trainer from the state of the last one opened
// for the same run and role.
func TestConformanceAgainstSimTrainer(t *testing.T) {
	_, url, _ := newSimTrainer(t, simFaults)
	t.Setenv("MGRPO_TEST_SIM_TINKER_KEY", testKey)
	trainertest.Run(t, resumingOpener(url))
}

// TestSimTrainerReplayAndResume: a step sent again, by the same trainer
// or by a restarted one resuming its state, is not trained twice by the
// sim trainer, and the next step trains on.
func TestSimTrainerReplayAndResume(t *testing.T) {
	s, url, _ := newSimTrainer(t, simFaults)
	o := trainerbridge.Options{Run: "resume", Role: rollout.RoleExecutor, BaseModel: testModel, APIKeyEnv: "MGRPO_TEST_SIM_TINKER_KEY", Adam: trainerbridge.AdamParams{LearningRate: 0.01}}
	t.Setenv(o.APIKeyEnv, testKey)
	ctx := trainertest.Context(t)
	open := func(state []byte) *tinker.Trainer {
		tr, err := tinker.New("tinker+"+url, o, fastConfig())
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if state != nil {
			if err := tr.Resume(state); err != nil {
				t.Fatalf("Resume: %v", err)
			}
		}
		if err := tr.Start(ctx); err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	batch := func(step int) trainerbridge.Batch {
		_, exec := trainertest.MustBatches(t, trainertest.BatchSpec{Run: o.Run, Step: step, PolicyVersion: int64(step - 1), Seed: uint64(step)})
		return exec
	}
	tr := open(nil)
	model := tr.State().ModelID
	first, err := tr.Train(ctx, batch(1))
	if err != nil {
		t.Fatalf("step 1: %v", err)
	}
	paramsAfter1, _ := s.Params(model)
	again, err := tr.Train(ctx, batch(1))
	if err != nil || again.Weights != first.Weights || again.Version != first.Version {
		t.Fatalf("step 1 again: %+v, %v; want the first result's weights and version", again, err)
	}
	state, err := tr.ResumeState()
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	// The SDK's resume: a fresh model, into which step 1's saved state
	// (weights and optimizer) is loaded.
	restarted := open(state)
	fresh := restarted.State().ModelID
	if fresh == model || restarted.State().SeqID != 1 {
		t.Fatalf("resumed into model %s at seq_id %d: want a fresh model after its load_weights (seq_id 1)", fresh, restarted.State().SeqID)
	}
	if now, _ := s.Params(fresh); !slices.Equal(now, paramsAfter1) {
		t.Error("the fresh model's parameters are not step 1's")
	}
	if res, err := restarted.Train(ctx, batch(1)); err != nil || res.Weights != first.Weights {
		t.Fatalf("step 1 by the restarted trainer: %+v, %v", res, err)
	}
	if now, _ := s.Params(model); !slices.Equal(now, paramsAfter1) {
		t.Error("replays of step 1 changed the parameters")
	}
	res, err := restarted.Train(ctx, batch(2))
	if err != nil {
		t.Fatalf("step 2: %v", err)
	}
	if res.Metrics["adam_step"] != 2 || res.Version != 2 {
		t.Errorf("step 2: adam step %v, version %d; want 2 and 2 (step 1 trained once)", res.Metrics["adam_step"], res.Version)
	}
}

// resumingOpener opens bridge trainers on the sim trainer at url, resuming
// a reopened trainer from the state of the last one opened for the same
// run and role, as a resumed run does.
func resumingOpener(url string) func(t *testing.T, run string, role rollout.Role) trainerbridge.Trainer {
	last := map[string]*tinker.Trainer{}
	return func(t *testing.T, run string, role rollout.Role) trainerbridge.Trainer {
		o := trainerbridge.Options{Run: run, Role: role, BaseModel: testModel, APIKeyEnv: "MGRPO_TEST_SIM_TINKER_KEY",
			Adam: trainerbridge.AdamParams{LearningRate: 0.01}}
		tr, err := tinker.New("tinker+"+url, o, fastConfig())
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if prev := last[run+"/"+string(role)]; prev != nil {
			state, err := prev.ResumeState()
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Resume(state); err != nil {
				t.Fatalf("Resume: %v", err)
			}
		}
		last[run+"/"+string(role)] = tr
		return tr
	}
}
