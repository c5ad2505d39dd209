package farm

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// The step pipeline, top to bottom: Run opens the run and restores
// training; then, step by step, the step policy forms the step (which
// rollouts, when: fixed, overlapped by S, streamed groups) and the
// dispatcher runs its units (in process, or by workers through the
// store's queue) — rolloutStep; the pipeline assembles and writes the
// step — writeStep; and the finisher trains and records it, in step
// order, beside the next steps' rollouts when the staleness allows.

// Run runs the configured steps in order and returns their summaries. When
// ctx is cancelled, no further rollout starts; in-flight rollouts get the
// grace period to finish and are then cancelled and abandoned. A step whose
// rollouts did not all finish writes no files; Run then returns the
// summaries of the completed steps and an error wrapping the context's
// cause. Any other error (the sink failing, a malformed trajectory
// reaching sample building) also stops the run.
func (f *Farm) Run(ctx context.Context) (_ []rollout.StepSummary, err error) {
	f.log.Info("rollout run", "run", f.cfg.Run, "seed", f.cfg.Seed, "mode", f.cfg.Mode, "steps", f.cfg.Steps,
		"rollouts_per_step", f.cfg.BatchSize*f.cfg.GroupSize,
		"batch_size", f.cfg.BatchSize, "group_size", f.cfg.GroupSize, "dbar", f.cfg.DBar.String(),
		"concurrency", f.cfg.Concurrency, "tasks", len(f.tasks))
	if f.cfg.Mode.TrainsExecutor() {
		if f.cfg.Expert == nil {
			f.log.Info("scoring", "r_expert", f.cfg.ExpertFallback.Describe())
		} else {
			f.log.Info("scoring", "r_expert", "the expert judge's rating of each report")
		}
	}
	warn := warnings{log: f.log}
	warn.atStart(f.cfg, len(f.tasks))

	// Open the run and restore training.
	written, err := f.openRun(ctx)
	if err != nil {
		return nil, err
	}
	if f.st != nil {
		// A store that loses the run stops it (ErrRunLost) instead of
		// leaving it waiting for results that are gone.
		wctx, endWatch, werr := f.st.watchRun(ctx, f.cfg.Run, watchPeriod(f.cfg.Worker.Lease))
		if werr != nil {
			return nil, werr
		}
		ctx = wctx
		defer func() { err = endWatch(err) }()
	}
	if err := f.restoreTraining(ctx, lastWritten(written, f.cfg.Steps)); err != nil {
		return nil, err
	}
	f.recordWrittenVersions(written)
	fin := f.newFinisher(ctx, &warn)
	policy := f.newPolicy(ctx, f, fin)
	var (
		sums  []rollout.StepSummary
		prevD []int
	)
	fail := func(err error) ([]rollout.StepSummary, error) {
		policy.stop(err)
		return fin.stop(sums), err
	}
	// write assembles and writes the steps whose rollouts are in and hands
	// them to the finisher.
	write := func(ready []stepRollouts) error {
		for _, r := range ready {
			out, err := f.writeStep(ctx, r, prevD)
			if err != nil {
				return err
			}
			prevD = out.d
			if m := r.manifest; m != nil {
				out.summary.Draws = m.Draws
				out.summary.ExtraDraws, out.summary.DiscardedGroups, out.summary.ExtraDrawsCapped = len(m.Discarded), m.Discarded, m.Capped
				out.draws = append(slices.Clone(m.Draws), m.Discarded...)
			}
			if s := r.scheduled; s != nil {
				// No trainer ran: the step's training is the schedule's.
				out.summary.Training, out.summary.TrainSeconds, out.summary.SyncSeconds = s.Training, s.TrainSeconds, s.SyncSeconds
			}
			if err := fin.finish(out); err != nil {
				return err
			}
		}
		return nil
	}
	if err := policy.resume(ctx, written); err != nil {
		return fail(err)
	}
	for step := 1; step <= f.cfg.Steps; step++ {
		if rec, ok := written[step]; ok {
			f.log.Info("step already written: skipped", "step", step, "files", rec.Files)
			sums = append(sums, *rec.Summary)
			prevD = rec.ObservedD
			fin.markWritten(step)
			continue
		}
		// The policy forms the step and has its units run; it returns the
		// steps whose rollouts are all in (none yet, when it overlaps).
		ready, err := policy.form(ctx, step)
		if err != nil {
			return fail(err)
		}
		if err := write(ready); err != nil {
			return fail(err)
		}
	}
	ready, err := policy.flush(ctx)
	if err != nil {
		return fail(err)
	}
	if err := write(ready); err != nil {
		return fail(err)
	}
	policy.stop(nil)
	sums = fin.stop(sums)
	return sums, fin.err()
}

// stepOutcome is what a written step leaves for the run and its store.
type stepOutcome struct {
	summary rollout.StepSummary
	// d are the d_k of the step's trained groups in plan order
	// (observedD): the next step's automatic d̄ takes them.
	d     []int
	stats []rollout.QueryStats
	// batches are the samples of the roles this process trains, kept as
	// the step is written: the trainers take them from memory, not back
	// from the step's files.
	batches map[rollout.Role][]rollout.Sample
	// draws are a streamed step's draws, its groups' and those discarded:
	// their results are dropped once the step is recorded (nil: a fixed
	// step, whose results are dropped by step).
	draws []int
}

// stepRollouts is a step whose rollouts are all in, not yet assembled.
type stepRollouts struct {
	plan    stepPlan
	results stepResults
	digests []resultDigest
	// start is when the step was scheduled, rolloutTime how long its
	// rollouts took.
	start       time.Time
	rolloutTime time.Duration
	// manifest is a streamed step's membership (nil: a fixed step).
	manifest *streamManifest
	// scheduled is the step of Config.Schedule it was formed from (nil:
	// none).
	scheduled *ScheduledStep
}

// rolloutStep schedules a step at the current policy versions (pinned:
// at those the admission rule fixes) and runs its rollouts (those a
// resumed run has not stored already).
func (f *Farm) rolloutStep(ctx context.Context, step int) (stepRollouts, error) {
	start := time.Now()
	version, executorVersion := f.scheduledVersions(step)
	plan := planStep(f.cfg.Run, f.cfg.Seed, step, f.cfg.BatchSize, f.cfg.GroupSize, f.tasks, version, executorVersion)
	plan.restarts = new(atomic.Int64)
	plan.prior = map[int]resultDigest{}
	f.log.Info("step start", "step", step, "queries", len(plan.tasks), "rollouts", len(plan.units), "policy_version", version, "executor_policy_version", executorVersion)
	f.cfg.Metrics.stepStarted(version)
	var (
		results  stepResults = make(memResults, len(plan.units))
		finished map[int]resultDigest
		digests  []resultDigest
		err      error
	)
	if f.st != nil {
		results = newStoredResults(f.st, &plan)
		if finished, err = f.scheduleStep(ctx, plan); err != nil {
			return stepRollouts{}, err
		}
	}
	if digests, err = f.dispatcher.dispatch(ctx, plan, results, finished); err != nil {
		return stepRollouts{}, err
	}
	rolloutTime := time.Since(start)
	f.cfg.Metrics.phaseDone(PhaseRollout, rolloutTime)
	return stepRollouts{plan: plan, results: results, digests: digests, start: start, rolloutTime: rolloutTime}, nil
}

// writeStep resolves the step's d̄, assembles and writes its files and
// returns its summary.
func (f *Farm) writeStep(ctx context.Context, r stepRollouts, prevD []int) (stepOutcome, error) {
	plan, results, digests, start, rolloutTime := r.plan, r.results, r.digests, r.start, r.rolloutTime
	step, version, executorVersion := plan.step, plan.policyVersion, plan.executorVersion

	if err := checkUseful(f.cfg.Failures, step, digests); err != nil {
		f.log.Error("run stopped: the step cannot be useful", "step", step, "error", err)
		return stepOutcome{}, err
	}
	d := observedD(digests, f.cfg.GroupSize, f.cfg.Failures.excludes())
	dbar, err := f.resolveDBar(step, prevD, d)
	if err != nil {
		return stepOutcome{}, err
	}
	gcfg := rollout.GroupConfig{Mode: f.cfg.Mode, DBar: dbar, DropZeroVariance: f.cfg.DropZeroVariance, RunSeed: f.cfg.Seed, Step: step}
	// The samples share the results' token slices (see StepFiles).
	builder := rollout.SampleBuilder{Run: f.cfg.Run, Step: step, PadTokenID: f.cfg.PadTokenID, PadPolicyVersion: executorVersion, ShareTokens: true}
	// The rollouts are all in: a cancellation that arrived during the grace
	// period must not keep a complete step from being written.
	wctx := context.WithoutCancel(ctx)
	sum := rollout.StepSummary{Step: step, PolicyVersion: version, ExecutorPolicyVersion: executorVersion, Queries: len(plan.tasks),
		Sampling: f.cfg.Sampling}
	acc := newSummaryAcc(&sum)
	w, err := f.beginStep(wctx, step)
	if err != nil {
		return stepOutcome{}, err
	}
	batches := f.trainedBatches()
	asm, err := assembleStep(wctx, gcfg, builder, plan, f.cfg.GroupSize, f.cfg.Failures.excludes(), results, acc, func(files rollout.StepFiles) error {
		if err := w.Append(wctx, files); err != nil {
			return fmt.Errorf("rollout step %d: %w", step, err)
		}
		if _, ok := batches[rollout.RolePlanner]; ok {
			batches[rollout.RolePlanner] = append(batches[rollout.RolePlanner], files.Planner...)
		}
		if _, ok := batches[rollout.RoleExecutor]; ok {
			batches[rollout.RoleExecutor] = append(batches[rollout.RoleExecutor], files.Executor...)
		}
		return nil
	})
	if err != nil {
		w.Abort()
		return stepOutcome{}, err
	}
	assembled := time.Now()
	if err := w.Commit(wctx); err != nil {
		return stepOutcome{}, fmt.Errorf("rollout step %d: %w", step, err)
	}
	// Assembly and writing now run together, one query at a time: the
	// assemble phase counts both, the write phase the final flush.
	written := time.Since(assembled)
	f.cfg.Metrics.phaseDone(PhaseAssemble, assembled.Sub(start)-rolloutTime)
	f.cfg.Metrics.phaseDone(PhaseWrite, written)

	acc.finish()
	sum.Counters = asm.counters
	sum.ExcludedGroups, sum.Excluded = len(asm.excluded), asm.excluded
	f.cfg.Metrics.excludedGroups(len(asm.excluded))
	sum.PlannerSamples, sum.ExecutorSamples = asm.planner, asm.executor
	if f.cfg.Mode.TrainsExecutor() {
		sum.DBar = dbar
	}
	sum.Usage.Price(f.cfg.Prices)
	f.cfg.Metrics.stepWritten(sum.DriftEvents, sum.MeanMainReward, sum.Accuracy)
	if q := float64(asm.counters.Queries); q > 0 {
		sum.MainZeroVarianceFraction = float64(asm.counters.MainZeroVariance) / q
		if f.cfg.Mode.TrainsExecutor() {
			sum.SubZeroVarianceFraction = float64(asm.counters.SubZeroVariance) / q
		}
	}
	sum.WallSeconds = time.Since(start).Seconds()
	if plan.restarts != nil {
		sum.RestartedRollouts = int(plan.restarts.Load())
	}
	sum.RolloutSeconds = rolloutTime.Seconds()
	sum.AssembleSeconds = assembled.Sub(start).Seconds() - sum.RolloutSeconds
	sum.WriteSeconds = written.Seconds()
	if s := rolloutTime.Seconds(); s > 0 {
		sum.RolloutsPerSecond = float64(len(digests)) / s
		sum.CompletionTokensPerSecond = float64(sum.CompletionTokens) / s
	}
	f.log.Info("step done", "step", step, "mean_main_reward", sum.MeanMainReward, "mean_sub_reward", sum.MeanSubReward,
		"accuracy", sum.Accuracy, "failed_rollouts", sum.FailedRollouts, "planner_samples", sum.PlannerSamples,
		"executor_samples", sum.ExecutorSamples, "drift_events", sum.DriftEvents, "history_edits", sum.HistoryEdits,
		"wall_seconds", sum.WallSeconds, "rollouts_per_second", sum.RolloutsPerSecond)
	if sum.DriftEvents > 0 {
		// The token path never re-renders the past: drift means a turn was
		// trained on ids the model did not sample from (an engine without
		// token routes, or a bug). Say it every step it happens.
		f.log.Warn("drift: trajectories were split because a prompt's token ids did not extend the previous turn's; "+
			"those samples' prompts are re-rendered text, not what the model sampled from (see docs/gateway.md)",
			"step", step, "drift_events", sum.DriftEvents)
	}
	return stepOutcome{summary: sum, d: d, stats: asm.stats, batches: batches}, nil
}

// lastWritten returns the summary of the highest written step up to
// steps, nil when none is.
func lastWritten(written map[int]store.StepRecord, steps int) *rollout.StepSummary {
	for s := steps; s >= 1; s-- {
		if rec, ok := written[s]; ok {
			return rec.Summary
		}
	}
	return nil
}

// observedD returns the d_k a step observed, in plan order, for an
// automatic d̄: those of the groups it trains. With exclude, a group
// holding a rollout that is still an infra failure leaves the batch, and
// its d_k leave the observations too: a rollout cut short by an outage
// delegated fewer executors than it would have, and the excluded groups'
// d_k would otherwise move d̄, and so the next step's files, with the
// cluster's outages. group is K (results q*K+k are query q's). Without
// exclusions the d_k are all of the step's, as before the classes.
func observedD(digests []resultDigest, group int, exclude bool) []int {
	d := make([]int, 0, len(digests))
	for q := 0; q < len(digests); q += group {
		g := digests[q:min(q+group, len(digests))]
		if exclude && anyInfra(g) {
			continue
		}
		for _, dg := range g {
			d = append(d, dg.D)
		}
	}
	return d
}

// resolveDBar picks the step's d̄: the fixed value, or with auto the
// quantile of the previous step's d_k, or of this step's own d_k for the
// first step (the calibration pass). Modes without a sub side need none.
func (f *Farm) resolveDBar(step int, prevD, thisD []int) (int, error) {
	if !f.cfg.Mode.TrainsExecutor() {
		return 0, nil
	}
	observed, source := prevD, "previous step"
	switch {
	case !f.cfg.DBar.Auto:
		source = "fixed"
	case len(prevD) == 0 && len(thisD) == 0:
		// Every group of the step was excluded (observedD), and the
		// step trains no sample: d̄ only labels its summary.
		observed, source = []int{1}, "none observed (every group excluded)"
	case len(prevD) == 0:
		observed, source = thisD, "calibration pass (this step)"
	}
	dbar, err := f.cfg.DBar.Resolve(observed)
	if err != nil {
		return 0, fmt.Errorf("rollout step %d: %w", step, err)
	}
	f.log.Info("dbar", "step", step, "dbar", dbar, "source", source, "spec", f.cfg.DBar.String())
	return dbar, nil
}
