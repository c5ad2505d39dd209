package farm

import (
	"context"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

func TestSplitStaleDropsWholeGroups(t *testing.T) {
	samples := []rollout.Sample{
		{QueryID: "a", PolicyVersion: 3}, {QueryID: "a", PolicyVersion: 1},
		{QueryID: "b", PolicyVersion: 2}, {QueryID: "b", PolicyVersion: 3},
		{QueryID: "c", PolicyVersion: 0}, {QueryID: "c", PolicyVersion: 0},
	}
	kept, c := splitStale(samples, 3, 1)
	if c.samples != 3 || c.groups != 2 || c.dropped != 4 {
		t.Errorf("counts %+v, want 3 stale samples in 2 groups, 4 dropped", c)
	}
	if len(kept) != 2 || kept[0].QueryID != "b" || kept[1].QueryID != "b" {
		t.Errorf("kept %+v, want query b's two samples", kept)
	}
	if all, c := splitStale(samples, 1, 1); len(all) != len(samples) || c != (staleCount{}) {
		t.Errorf("nothing stale: kept %d, counts %+v", len(all), c)
	}
	if got := oldestVersion(kept, 9); got != 2 {
		t.Errorf("oldest version %d, want 2", got)
	}
	if got := oldestVersion(nil, 9); got != 9 {
		t.Errorf("oldest of none %d, want the default 9", got)
	}
}

// recordingTrainer answers version = previous + jump and keeps the batch
// sizes it received.
type recordingTrainer struct {
	jump  int64
	sizes map[int]int
}

func (r *recordingTrainer) Start(context.Context) error { return nil }
func (r *recordingTrainer) Close() error                { return nil }
func (r *recordingTrainer) Train(_ context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	r.sizes[b.Step] = len(b.Samples)
	return trainerbridge.StepResult{Version: b.PolicyVersion + r.jump}, nil
}

// TestStalePolicy: a trainer whose version jumps by 5 a step makes the
// batches of S = 1 sampled a step ahead more than 1 version stale; drop
// leaves their groups out of the batch, keep trains them, both count them.
func TestStalePolicy(t *testing.T) {
	for _, policy := range []StalePolicy{StaleDrop, StaleKeep} {
		t.Run(string(policy), func(t *testing.T) {
			dir := t.TempDir()
			runner := runnerFunc(func(_ context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
				return scriptedRollout(tk, task, 2, tk.Answer)
			})
			cfg := testFarmConfig(dir, runner)
			cfg.Steps = 3
			tr := &recordingTrainer{jump: 5, sizes: map[int]int{}}
			cfg.Training = &Training{MaxStaleness: 1, StalePolicy: policy, Trainers: map[rollout.Role]trainerbridge.Trainer{rollout.RolePlanner: tr}}
			sums := mustRunFarm(t, cfg, testTasks(6))
			for _, sum := range sums {
				rec := sum.Training[string(rollout.RolePlanner)]
				stale := rec.PreviousVersion-sum.PolicyVersion > 1
				switch {
				case !stale && (rec.StaleSamples != 0 || rec.Samples != sum.PlannerSamples):
					t.Errorf("step %d, nothing stale: %+v of %d samples", sum.Step, rec, sum.PlannerSamples)
				case stale && rec.StaleSamples != sum.PlannerSamples:
					t.Errorf("step %d: %d stale samples counted, want all %d", sum.Step, rec.StaleSamples, sum.PlannerSamples)
				case stale && rec.StaleGroups != sum.Queries:
					t.Errorf("step %d: %d stale groups, want %d", sum.Step, rec.StaleGroups, sum.Queries)
				case stale && policy == StaleDrop && (rec.Samples != 0 || rec.StaleDropped != sum.PlannerSamples || tr.sizes[sum.Step] != 0):
					t.Errorf("step %d, drop: sent %d (trainer got %d), dropped %d; want 0 sent, %d dropped", sum.Step, rec.Samples, tr.sizes[sum.Step], rec.StaleDropped, sum.PlannerSamples)
				case stale && policy == StaleKeep && (rec.Samples != sum.PlannerSamples || rec.StaleDropped != 0 || tr.sizes[sum.Step] != sum.PlannerSamples):
					t.Errorf("step %d, keep: sent %d (trainer got %d), dropped %d; want all %d sent", sum.Step, rec.Samples, tr.sizes[sum.Step], rec.StaleDropped, sum.PlannerSamples)
				case policy == StaleDrop && rec.Staleness > 1 && rec.Samples > 0:
					t.Errorf("step %d, drop: trained a batch %d versions stale", sum.Step, rec.Staleness)
				}
			}
			if s := sums[1].Training[string(rollout.RolePlanner)]; s.StaleSamples == 0 {
				t.Errorf("step 2 (sampled at 0, trained at 5) counted nothing stale: %+v", s)
			}
		})
	}
}
