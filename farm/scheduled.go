package farm

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// ScheduledStep is one step of a schedule given as data (Config.Schedule):
// which rollouts the step holds, at which versions, and what of the step
// followed a run's timing — a streamed step's draws, the restarts at
// weight updates, the training after it. `mgrpo replay` reads it from a
// recorded run, so that a replay forms each step as the recorded run did
// instead of by its own timing.
type ScheduledStep struct {
	// Units are the step's rollouts in plan order: GroupSize consecutive
	// tasks per query, k = 0…K−1, each with the seed and the policy
	// versions it was sampled with (a streamed step's carry their draw's
	// number as Step).
	Units []rollout.RolloutTask
	// PolicyVersion and ExecutorPolicyVersion are the step's, as its
	// summary gives them.
	PolicyVersion, ExecutorPolicyVersion int64
	// Streamed marks a streamed step (Training.StreamGroups): Draws are
	// its groups' draws in completion order, Discarded the draws dynamic
	// sampling left out (not run again: their groups are not in the step)
	// and Capped says the cap on them was reached.
	Streamed  bool
	Draws     []int
	Discarded []int
	Capped    bool
	// Restarted counts the step's rollouts restarted at a weight update
	// (PartialRestart).
	Restarted int
	// Training, TrainSeconds and SyncSeconds are what training did after
	// the step; the step's summary says so, as no trainer runs.
	Training                  map[string]rollout.RoleTraining
	TrainSeconds, SyncSeconds float64
}

// validateSchedule reports what of c.Schedule does not fit c.
func (c Config) validateSchedule(add func(string, ...any)) {
	if c.Schedule == nil {
		return
	}
	if len(c.Schedule) != c.Steps {
		add("Schedule: %d steps, Steps %d: a schedule gives every step", len(c.Schedule), c.Steps)
	}
	if c.Training != nil {
		add("Schedule: not with Training: a schedule fixes the versions the trainers would set")
	}
	if c.Queue {
		add("Schedule: not with Queue (--workers): a scheduled step's rollouts run here")
	}
	for i, s := range c.Schedule {
		if c.GroupSize > 0 && (len(s.Units) == 0 || len(s.Units)%c.GroupSize != 0) {
			add("Schedule step %d: %d rollouts, not whole groups of %d", i+1, len(s.Units), c.GroupSize)
		}
		if s.Streamed && c.GroupSize > 0 && len(s.Draws) != len(s.Units)/c.GroupSize {
			add("Schedule step %d: %d draws for %d groups", i+1, len(s.Draws), len(s.Units)/max(c.GroupSize, 1))
		}
	}
}

// scheduledSteps is the step policy of a run given its schedule
// (Config.Schedule): each step runs the rollouts the schedule names,
// at its versions, one step after another.
type scheduledSteps struct {
	f   *Farm
	fin *finisher
}

func newScheduledSteps(_ context.Context, f *Farm, fin *finisher) stepPolicy {
	return scheduledSteps{f: f, fin: fin}
}

func (scheduledSteps) resume(context.Context, map[int]store.StepRecord) error { return nil }
func (scheduledSteps) flush(context.Context) ([]stepRollouts, error)          { return nil, nil }
func (scheduledSteps) stop(error)                                             {}

func (p scheduledSteps) form(ctx context.Context, step int) ([]stepRollouts, error) {
	if err := p.f.admit(ctx, p.fin, step); err != nil {
		return nil, err
	}
	r, err := p.f.rolloutScheduled(ctx, step)
	if err != nil {
		return nil, err
	}
	return []stepRollouts{r}, nil
}

// scheduledPlan returns the plan of the schedule's step.
func (f *Farm) scheduledPlan(step int, s ScheduledStep) (stepPlan, error) {
	plan := stepPlan{step: step, units: s.Units, policyVersion: s.PolicyVersion, executorVersion: s.ExecutorPolicyVersion,
		restarts: new(atomic.Int64), prior: map[int]resultDigest{}}
	plan.restarts.Add(int64(s.Restarted))
	byID := make(map[string]Task, len(f.tasks))
	for _, t := range f.tasks {
		byID[t.ID] = t
	}
	K := f.cfg.GroupSize
	for q := 0; q < len(s.Units); q += K {
		id := s.Units[q].QueryID
		t, ok := byID[id]
		if !ok {
			return stepPlan{}, fmt.Errorf("scheduled step %d: query %q is not a task of the run", step, id)
		}
		for k, u := range s.Units[q : q+K] {
			if u.QueryID != id || u.K != k {
				return stepPlan{}, fmt.Errorf("scheduled step %d: rollout %s in the slot of query %q rollout %d", step, u.ID(), id, k)
			}
		}
		plan.tasks = append(plan.tasks, t)
	}
	return plan, nil
}

// rolloutScheduled runs the rollouts of the schedule's step. A streamed
// step's results are kept, and its manifest recorded, as a streamed run's
// are: the store then holds what it would hold of that run.
func (f *Farm) rolloutScheduled(ctx context.Context, step int) (stepRollouts, error) {
	start := time.Now()
	s := f.cfg.Schedule[step-1]
	plan, err := f.scheduledPlan(step, s)
	if err != nil {
		return stepRollouts{}, err
	}
	f.log.Info("step start (scheduled)", "step", step, "queries", len(plan.tasks), "rollouts", len(plan.units),
		"policy_version", plan.policyVersion, "executor_policy_version", plan.executorVersion)
	f.cfg.Metrics.stepStarted(plan.policyVersion)
	var (
		results  stepResults = make(memResults, len(plan.units))
		manifest *streamManifest
		finished map[int]resultDigest
	)
	switch {
	case s.Streamed:
		manifest = &streamManifest{Step: step, Draws: s.Draws, Discarded: s.Discarded, Capped: s.Capped,
			PolicyVersion: s.PolicyVersion, ExecutorPolicyVersion: s.ExecutorPolicyVersion}
		if f.st != nil {
			if err := f.st.putManifest(ctx, f.cfg.Run, *manifest, len(plan.units)); err != nil {
				return stepRollouts{}, err
			}
			results = drawKeyedResults{st: f.st, plan: &plan}
		}
	case f.st != nil:
		results = newStoredResults(f.st, &plan)
		if finished, err = f.scheduleStep(ctx, plan); err != nil {
			return stepRollouts{}, err
		}
	}
	digests, err := f.dispatcher.dispatch(ctx, plan, results, finished)
	if err != nil {
		return stepRollouts{}, err
	}
	rolloutTime := time.Since(start)
	f.cfg.Metrics.phaseDone(PhaseRollout, rolloutTime)
	return stepRollouts{plan: plan, results: results, digests: digests, start: start, rolloutTime: rolloutTime,
		manifest: manifest, scheduled: &s}, nil
}

// drawKeyedResults keeps a scheduled streamed step's results in the store
// under their draws, as a streamed run keeps them (and drops them once the
// step is recorded).
type drawKeyedResults struct {
	st   *storeAccess
	plan *stepPlan
}

func (d drawKeyedResults) put(ctx context.Context, _ int, r *RolloutResult) error {
	return d.st.putDrawResult(ctx, r.Task.Step, r)
}

func (d drawKeyedResults) get(ctx context.Context, i int) (*RolloutResult, error) {
	u := d.plan.units[i]
	return d.st.drawResult(ctx, u, u.Step)
}
