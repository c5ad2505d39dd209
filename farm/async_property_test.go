package farm

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// jitterTrainer trains in a random time and checks, as each batch arrives,
// that it was sampled within the staleness bound of its own version.
type jitterTrainer struct {
	slowTrainer
	rng   *rand.Rand
	bound int64
	t     *testing.T
	// sampled is each step's sampling version, set by the runner.
	sampled func(step int) int64
}

func (j *jitterTrainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	if v := j.sampled(b.Step); b.PolicyVersion-v > j.bound || b.PolicyVersion < v {
		j.t.Errorf("step %d sampled at version %d trained on top of %d: more than %d behind", b.Step, v, b.PolicyVersion, j.bound)
	}
	j.tl.mu.Lock()
	j.delay = time.Duration(j.rng.IntN(8)) * time.Millisecond
	j.tl.mu.Unlock()
	return j.slowTrainer.Train(ctx, b)
}

// TestAdmissionRuleUnderRandomSchedules runs many short asynchronous runs
// whose rollouts and training steps take random times, and checks the
// admission rule (step t starts after step t-1-S is trained), the bound on
// every trained batch and that each batch is trained once, in step order.
func TestAdmissionRuleUnderRandomSchedules(t *testing.T) {
	for seed := uint64(1); seed <= 24; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		staleness := int(seed % 4)
		tl := newTimeline()
		sampledAt := map[int]int64{}
		runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
			tl.mu.Lock()
			if _, ok := tl.firstRun[task.Step]; !ok {
				tl.firstRun[task.Step] = time.Now()
			}
			sampledAt[task.Step] = task.PolicyVersion
			d := time.Duration(rng.IntN(4)) * time.Millisecond
			tl.mu.Unlock()
			time.Sleep(d)
			return scriptedRollout(tk, task, 1+task.K%2, tk.Answer)
		})
		dir := t.TempDir()
		cfg := testFarmConfig(dir, runner)
		cfg.Steps, cfg.Concurrency = 7, 3
		cfg.Store = openSQLite(t, filepath.Join(dir, "store.db"))
		sampled := func(step int) int64 {
			tl.mu.Lock()
			defer tl.mu.Unlock()
			return sampledAt[step]
		}
		trainer := &jitterTrainer{slowTrainer: slowTrainer{tl: tl}, rng: rand.New(rand.NewPCG(seed, 9)), bound: int64(staleness), t: t, sampled: sampled}
		cfg.Training = &Training{MaxStaleness: staleness, Trainers: map[rollout.Role]trainerbridge.Trainer{rollout.RolePlanner: trainer}}
		sums := mustRunFarm(t, cfg, testTasks(4))
		if len(sums) != 7 {
			t.Fatalf("seed %d: %d steps", seed, len(sums))
		}
		for s := 1; s <= 7; s++ {
			if before := s - 1 - staleness; before >= 1 && tl.firstRun[s].Before(tl.trainEnd[before]) {
				t.Errorf("seed %d S=%d: step %d started before step %d was trained", seed, staleness, s, before)
			}
			if s > 1 && tl.trainStart[s].Before(tl.trainEnd[s-1]) {
				t.Errorf("seed %d: step %d trained before step %d was", seed, s, s-1)
			}
			if rec := sums[s-1].Training[string(rollout.RolePlanner)]; rec.Staleness < 0 || rec.Staleness > int64(staleness) {
				t.Errorf("seed %d S=%d step %d: staleness %d", seed, staleness, s, rec.Staleness)
			}
		}
		for key, n := range tl.trainedKeys {
			if n != 1 {
				t.Errorf("seed %d: batch %s trained %d times", seed, key, n)
			}
		}
	}
}
