package farm

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// batchLog keeps every batch a trainer received.
type batchLog struct {
	mu      sync.Mutex
	batches []trainerbridge.Batch
	// onTrain, when set, is called with each batch before it is trained.
	onTrain func(trainerbridge.Batch)
}

// loggingTrainer answers version = previous + 1 and logs each batch.
type loggingTrainer struct{ log *batchLog }

func (l loggingTrainer) Start(context.Context) error { return nil }
func (l loggingTrainer) Close() error                { return nil }
func (l loggingTrainer) Train(_ context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	l.log.mu.Lock()
	l.log.batches = append(l.log.batches, b)
	hook := l.log.onTrain
	l.log.mu.Unlock()
	if hook != nil {
		hook(b)
	}
	return trainerbridge.StepResult{Version: b.PolicyVersion + 1}, nil
}

// streamConfig is a scripted streamed run of steps steps of batch queries
// × 2 at max staleness s, the planner trained by a logging trainer.
func streamConfig(dir string, runner Runner, steps, batch, s int, log *batchLog) Config {
	cfg := testFarmConfig(dir, runner)
	cfg.Steps, cfg.BatchSize, cfg.GroupSize, cfg.Concurrency = steps, batch, 2, 4
	cfg.Training = &Training{StreamGroups: true, MaxStaleness: s, Trainers: map[rollout.Role]trainerbridge.Trainer{
		rollout.RolePlanner: loggingTrainer{log: log}}}
	return cfg
}

// mixedAnswer answers right for even k and wrong for odd k: a group whose
// rewards differ.
func mixedAnswer(t Task, task rollout.RolloutTask) string {
	if task.K%2 == 0 {
		return t.Answer
	}
	return "wrong"
}

// TestStreamedStepShipsBeforeSlowestRollout holds the rollouts of draw 1
// until the trainer receives step 1: a fixed step would wait for them for
// ever, a streamed one ships with the other groups and trains draw 1's in
// step 2, within the bound.
func TestStreamedStepShipsBeforeSlowestRollout(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	log := &batchLog{onTrain: func(b trainerbridge.Batch) {
		if b.Step == 1 {
			once.Do(func() { close(release) })
		}
	}}
	released := make(chan bool, 2)
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
		if task.Step == 1 {
			// A safety net so a broken farm fails instead of hanging.
			select {
			case <-release:
				released <- true
			case <-time.After(20 * time.Second):
				released <- false
			}
		}
		return scriptedRollout(t, task, 1, mixedAnswer(t, task))
	})
	cfg := streamConfig(t.TempDir(), runner, 3, 2, 1, log)
	sums := mustRunFarm(t, cfg, testTasks(4))
	for range 2 {
		if !<-released {
			t.Fatal("draw 1's rollouts ended before step 1 trained: the step waited for its slowest rollout")
		}
	}
	if slices.Contains(sums[0].Draws, 1) {
		t.Errorf("step 1 holds draw 1 (draws %v)", sums[0].Draws)
	}
	if !slices.Contains(sums[1].Draws, 1) {
		t.Errorf("step 2 does not hold draw 1, due by then (draws %v)", sums[1].Draws)
	}
	checkStreamedBatches(t, sums, log, 1, 4)
}

// checkStreamedBatches checks that every step was trained once on the
// groups of its draws, no draw twice, every sample within s versions.
func checkStreamedBatches(t *testing.T, sums []rollout.StepSummary, log *batchLog, s, tasks int) {
	t.Helper()
	seen := map[int]int{}
	queries := map[int][]string{}
	for _, sum := range sums {
		if len(sum.Draws) != 2 {
			t.Errorf("step %d: %d draws %v", sum.Step, len(sum.Draws), sum.Draws)
		}
		for _, n := range append(slices.Clone(sum.Draws), sum.DiscardedGroups...) {
			if prev, ok := seen[n]; ok {
				t.Errorf("draw %d in steps %d and %d", n, prev, sum.Step)
			}
			seen[n] = sum.Step
		}
		for _, n := range sum.Draws {
			queries[sum.Step] = append(queries[sum.Step], testTasks(tasks)[(n-1)%tasks].ID)
		}
		for role, rec := range sum.Training {
			if rec.Staleness > int64(s) || rec.StaleSamples > 0 {
				t.Errorf("step %d %s: staleness %d, %d stale samples (S = %d)", sum.Step, role, rec.Staleness, rec.StaleSamples, s)
			}
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.batches) != len(sums) {
		t.Fatalf("%d batches trained for %d steps", len(log.batches), len(sums))
	}
	for _, b := range log.batches {
		got := map[string]bool{}
		for _, smp := range b.Samples {
			got[smp.QueryID] = true
			if b.PolicyVersion-smp.PolicyVersion > int64(s) || smp.PolicyVersion > b.PolicyVersion {
				t.Errorf("step %d: a sample of version %d trained at version %d (S = %d)", b.Step, smp.PolicyVersion, b.PolicyVersion, s)
			}
		}
		for _, q := range queries[b.Step] {
			if !got[q] {
				t.Errorf("step %d: query %s of its draws not trained (got %v)", b.Step, q, got)
			}
		}
	}
}

// TestStreamedStalenessBound runs streamed steps whose rollouts take
// uneven times (a heavy tail by draw) at S = 0, 1, 2, 3: every trained
// token is within S versions of its trainer, and steps still ship in full.
//
// The bound holds when the draws that may be unassigned at once, about
// (S+3)·B of them, ask distinct queries. With fewer tasks two draws of one
// query can both be due by the same step, which cannot hold a query twice,
// and the streamer ships past a deadline by design (its warning); with 4
// tasks at S = 3 a loaded machine's timing found that case.
func TestStreamedStalenessBound(t *testing.T) {
	for _, s := range []int{0, 1, 2, 3} {
		const batch = 2
		tasks := (s + 3) * batch
		// A trainer step of a few milliseconds, as a GPU step would take.
		log := &batchLog{onTrain: func(trainerbridge.Batch) { time.Sleep(3 * time.Millisecond) }}
		runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
			h := fnv.New32a()
			h.Write([]byte{byte(task.Step), byte(task.K), byte(s)})
			d := time.Duration(h.Sum32()%4) * time.Millisecond
			if h.Sum32()%5 == 0 {
				d = 30 * time.Millisecond
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
			return scriptedRollout(t, task, 1, mixedAnswer(t, task))
		})
		cfg := streamConfig(t.TempDir(), runner, 10, batch, s, log)
		sums := mustRunFarm(t, cfg, testTasks(tasks))
		if len(sums) != 10 {
			t.Fatalf("S=%d: %d steps", s, len(sums))
		}
		checkStreamedBatches(t, sums, log, s, tasks)
	}
}
