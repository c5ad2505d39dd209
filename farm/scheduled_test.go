package farm

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// testSchedule is two steps of 2 queries × K = 4: a fixed step of the
// queries q2 and q0 (not the ones step 1 would plan), one rollout sampled
// at other versions, and a streamed step of draws 7 and 4 that discarded
// draw 5, restarted two rollouts and trained.
func testSchedule(run string, seed uint64) []ScheduledStep {
	units := func(step int, q string, planner, executor int64) []rollout.RolloutTask {
		var out []rollout.RolloutTask
		for k := range 4 {
			out = append(out, rollout.RolloutTask{Run: run, Step: step, QueryID: q, K: k, Seed: rollout.RolloutSeed(seed, step, q, k),
				PolicyVersion: planner, ExecutorPolicyVersion: executor})
		}
		return out
	}
	first := append(units(1, "q2", 3, 5), units(1, "q0", 3, 5)...)
	first[6].PolicyVersion, first[6].ExecutorPolicyVersion = 4, 6
	return []ScheduledStep{
		{Units: first, PolicyVersion: 3, ExecutorPolicyVersion: 5},
		{Units: append(units(7, "q3", 4, 6), units(4, "q1", 4, 5)...), PolicyVersion: 4, ExecutorPolicyVersion: 5,
			Streamed: true, Draws: []int{7, 4}, Discarded: []int{5}, Restarted: 2,
			Training:     map[string]rollout.RoleTraining{"planner": {Samples: 8, SampledVersion: 4, PreviousVersion: 4, Version: 5, TrainSeconds: 1.5}},
			TrainSeconds: 1.5, SyncSeconds: 0.25},
	}
}

// TestScheduleFormsTheStepsItNames runs a farm given a schedule, with and
// without a store: each step runs exactly the rollouts the schedule names,
// in its order, at their versions; a streamed step's summary names its
// draws and discarded groups, and each summary the restarts and training
// the schedule gives. ReadSchedule reads the same schedule back from the
// written run.
func TestScheduleFormsTheStepsItNames(t *testing.T) {
	for _, withStore := range []bool{false, true} {
		name := "memory"
		if withStore {
			name = "store"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var mu sync.Mutex
			seen := map[string]rollout.RolloutTask{}
			runner := runnerFunc(func(_ context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
				mu.Lock()
				seen[task.ID()] = task
				mu.Unlock()
				return scriptedRollout(tk, task, 1+task.K%3, tk.Answer)
			})
			cfg := testFarmConfig(dir, runner)
			cfg.Steps = 2
			cfg.Schedule = testSchedule(cfg.Run, cfg.Seed)
			if withStore {
				st, err := sqlite.Open(context.Background(), filepath.Join(dir, "store.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				cfg.Store = st
			}
			sums := mustRunFarm(t, cfg, testTasks(4))
			var want []rollout.RolloutTask
			for _, s := range cfg.Schedule {
				want = append(want, s.Units...)
			}
			if len(seen) != len(want) {
				t.Errorf("%d rollouts ran, want the schedule's %d", len(seen), len(want))
			}
			for _, u := range want {
				if got, ok := seen[u.ID()]; !ok || got != u {
					t.Errorf("rollout %s ran as %+v (ran: %v), want %+v", u.ID(), got, ok, u)
				}
			}
			got, err := ReadSchedule(dir, sums)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, cfg.Schedule) {
				t.Errorf("ReadSchedule of the written run:\n%+v\nwant\n%+v", got, cfg.Schedule)
			}
			if s := sums[0]; s.PolicyVersion != 3 || s.ExecutorPolicyVersion != 5 || s.Draws != nil || s.RestartedRollouts != 0 || s.Training != nil {
				t.Errorf("step 1's summary: %+v", s)
			}
			s := sums[1]
			if !reflect.DeepEqual(s.Draws, []int{7, 4}) || !reflect.DeepEqual(s.DiscardedGroups, []int{5}) || s.ExtraDraws != 1 {
				t.Errorf("step 2's draws %v, discarded %v, extra draws %d: want [7 4], [5], 1", s.Draws, s.DiscardedGroups, s.ExtraDraws)
			}
			if s.RestartedRollouts != 2 || s.TrainSeconds != 1.5 || s.SyncSeconds != 0.25 || s.Training["planner"].Version != 5 {
				t.Errorf("step 2's summary: restarted %d, training %+v (%v, %v)", s.RestartedRollouts, s.Training, s.TrainSeconds, s.SyncSeconds)
			}
			// Turns that report no version take their rollout's.
			planner, _, _ := mustReadStep(t, dir, 1)
			for _, p := range planner {
				want := int64(3)
				if p.QueryID == "q0" && p.Rollout == 2 {
					want = 4
				}
				if p.PolicyVersion != want {
					t.Errorf("planner sample of %s rollout %d: policy version %d, want %d", p.QueryID, p.Rollout, p.PolicyVersion, want)
				}
			}
		})
	}
}

// TestScheduleValidate: a schedule must give every step in whole groups,
// and goes with neither Training nor Queue.
func TestScheduleValidate(t *testing.T) {
	base := testFarmConfig(t.TempDir(), runnerFunc(func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return nil }))
	base.Steps = 2
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"steps", func(c *Config) { c.Steps = 3 }, "a schedule gives every step"},
		{"training", func(c *Config) { c.Training = &Training{} }, "not with Training"},
		{"partial group", func(c *Config) { c.Schedule[0].Units = c.Schedule[0].Units[:3] }, "not whole groups of 4"},
		{"draws", func(c *Config) { c.Schedule[1].Draws = []int{7} }, "1 draws for 2 groups"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.Schedule = testSchedule(cfg.Run, cfg.Seed)
			c.change(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate: %v; want an error saying %q", err, c.want)
			}
		})
	}
	cfg := base
	cfg.Schedule = testSchedule(cfg.Run, cfg.Seed)
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate of a valid schedule: %v", err)
	}
}

// TestReadScheduleErrors: a step without rollouts.jsonl and summary lines
// out of step order are errors naming what is wrong.
func TestReadScheduleErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadSchedule(dir, []rollout.StepSummary{{Step: 1}}); err == nil || !strings.Contains(err.Error(), "rollouts.jsonl is missing") {
		t.Errorf("no rollouts.jsonl: %v", err)
	}
	if _, err := ReadSchedule(dir, []rollout.StepSummary{{Step: 2}}); err == nil || !strings.Contains(err.Error(), "summary line 1 is step 2") {
		t.Errorf("summary of step 2 first: %v", err)
	}
}
