package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/internal/pool"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// DefaultGrace is how long in-flight rollouts may go on after the run's
// context is cancelled when Config.Grace is 0.
const DefaultGrace = 30 * time.Second

// Config configures a Farm.
type Config struct {
	// Run names the run; it is written into every sample and task id.
	Run string
	// Seed is the run seed: rollout seeds (RolloutSeed) and the alignment
	// (AlignSeed) derive from it.
	Seed uint64
	// Steps is the number of steps; each takes the next BatchSize tasks
	// (wrapping around the task list) and runs GroupSize rollouts of each.
	Steps, BatchSize, GroupSize int
	// Mode selects the agents and the emitted samples.
	Mode rollout.Mode
	// DBar is d̄, fixed or auto (modes with a sub side only).
	DBar rollout.DBarSpec
	// DropZeroVariance drops zero-variance groups' samples instead of
	// emitting them with zero advantages.
	DropZeroVariance bool
	// Weights are the reward coefficients.
	Weights rollout.RewardWeights
	// Scorer judges planner answers against gold answers (r_correct).
	Scorer rollout.Scorer
	// Expert, when set, rates executor reports (r_expert); without it,
	// ExpertFallback (empty: DefaultExpertFallback) says what r_expert is.
	Expert         rollout.ExpertJudge
	ExpertFallback rollout.ExpertFallback
	// Concurrency bounds the rollouts in flight across the whole step: a
	// free slot takes the next rollout of any query, so no group waits on
	// another group's slow rollout.
	Concurrency int
	// Runner carries out rollouts (an *AgentRunner in production).
	Runner Runner
	// Sink receives each completed step's files.
	Sink rollout.Sink
	// PolicyVersions returns the current policy versions of the planner
	// (the single agent) and of the executors; they are read once when a
	// step is scheduled. Nil means version 0 for both. With Training set,
	// the versions are the trainers' and this is not used.
	PolicyVersions func() (planner, executor int64)
	// PadTokenID is the token of padding samples (queries in which no
	// rollout delegated, mode mgrpo).
	PadTokenID int
	// Grace is how long in-flight rollouts may finish after the context is
	// cancelled before they are abandoned; 0 means DefaultGrace.
	Grace time.Duration
	// Logger receives the run's log lines (nil: discard).
	Logger *slog.Logger
	// OnProgress, when set, is called after every finished rollout, from
	// one goroutine at a time; it should return quickly.
	OnProgress func(Progress)
	// OnStep, when set, is called with each step's summary once its files
	// and summary are written, before the next step starts.
	OnStep func(rollout.StepSummary)
	// Metrics, when set, receives the farm's counters (see NewMetrics).
	Metrics *Metrics
	// Prices price each step's Usage (all 0: counted, not priced).
	Prices rollout.Prices

	// Store, when set, holds the run: its record (RunConfig and the tasks,
	// for workers), every rollout's result as it finishes (a step is
	// assembled from the store one query at a time, so memory does not
	// grow with the step), each written step's record and statistics (for
	// a trainer of either side) and the queue of Queue mode. Nil keeps a
	// step's results in memory.
	Store store.Store
	// RunConfig is the run's configuration as JSON, secrets excepted,
	// written into the run record for workers (with Store).
	RunConfig json.RawMessage
	// Resume continues the run found in Store: written steps are skipped,
	// stored results are kept and the rest is run with the same seeds.
	// Without it a run of which Store holds steps is refused.
	Resume bool
	// Queue hands each step's rollouts out through Store's queue, to
	// `mgrpo worker` processes and to Concurrency local ones (0: this
	// process only coordinates). Needs Store.
	Queue bool
	// Worker tunes the leases of the local worker in Queue mode.
	Worker WorkerOptions
	// Training, when set, trains each step's samples before the next step
	// (see Training); the batches are kept in memory as the step is
	// written.
	Training *Training
}

// Validate reports every invalid field of c, each named with how to fix it.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Run == "" {
		add("Run: empty; name the run (it is written into every sample)")
	}
	if c.Steps < 1 {
		add("Steps %d: must be at least 1", c.Steps)
	}
	if c.BatchSize < 1 {
		add("BatchSize %d: must be at least 1 (queries per step)", c.BatchSize)
	}
	if c.GroupSize < 1 {
		add("GroupSize %d: must be at least 1 (rollouts per query; the paper uses 8)", c.GroupSize)
	}
	mode, err := rollout.ParseMode(string(c.Mode))
	switch {
	case c.Mode == "":
		add("Mode: empty; set %s, %s or %s", rollout.ModeMGRPO, rollout.ModeFrozenSub, rollout.ModeSingle)
	case err != nil:
		add("Mode: %v", err)
	}
	if err == nil && mode.TrainsExecutor() && !c.DBar.Auto && c.DBar.Fixed < 1 {
		add("DBar %d: mode %s needs d̄ ≥ 1 or auto (ParseDBar)", c.DBar.Fixed, mode)
	}
	if err := c.Weights.Validate(); err != nil {
		add("Weights: %v (DefaultRewardWeights gives the paper's)", err)
	}
	if c.Scorer == nil {
		add("Scorer: nil; set the answer scorer (r_correct), e.g. normalized exact match")
	}
	if _, err := rollout.ParseExpertFallback(string(c.ExpertFallback)); err != nil {
		add("ExpertFallback: %v", err)
	}
	switch {
	case c.Queue && c.Store == nil:
		add("Queue: needs a Store whose queue the workers share")
	case c.Queue && c.Concurrency < 0:
		add("Concurrency %d: must not be negative (0: coordinate only, the workers run every rollout)", c.Concurrency)
	case c.Resume && c.Store == nil:
		add("Resume: needs the Store of the run to resume")
	case c.Training != nil && len(c.Training.Peers) > 0 && c.Store == nil:
		add("Training.Peers: the decoupled mode needs the Store both sides share")
	case !c.Queue && c.Concurrency < 1:
		add("Concurrency %d: must be at least 1 (rollouts in flight; BatchSize×GroupSize runs a whole step at once)", c.Concurrency)
	}
	if t := c.Training; t != nil {
		if t.MaxStaleness < 0 {
			add("Training.MaxStaleness %d: must not be negative (0: on-policy)", t.MaxStaleness)
		}
		if _, err := ParsePartialRollouts(string(t.PartialRollouts)); err != nil {
			add("Training.PartialRollouts: %v", err)
		} else if t.PartialRollouts == PartialRestart && c.Queue {
			add("Training.PartialRollouts restart: the workers' rollouts cannot be restarted from here; use continue with Queue (--workers)")
		}
		if _, err := ParseStalePolicy(string(t.StalePolicy)); err != nil {
			add("Training.StalePolicy: %v", err)
		}
		if t.MaxExtraDraws < 0 {
			add("Training.MaxExtraDraws %d: must not be negative (0: one per query of the batch)", t.MaxExtraDraws)
		}
		if t.StreamGroups && c.Queue {
			add("Training.StreamGroups: not with Queue (--workers): the workers' queue runs fixed steps")
		}
		if t.StreamGroups && len(t.Peers) > 0 {
			add("Training.StreamGroups: not with the decoupled mode (Training.Peers): the other side trains fixed steps")
		}
	}
	switch r := c.Runner.(type) {
	case nil:
		if !c.Queue || c.Concurrency > 0 {
			add("Runner: nil; set an *AgentRunner with the mode's agent")
		}
	case *AgentRunner:
		if r == nil {
			add("Runner: nil *AgentRunner")
		} else if err == nil && c.Mode != "" {
			if verr := r.validateFor(mode); verr != nil {
				errs = append(errs, verr)
			}
		}
	}
	if c.Sink == nil {
		add("Sink: nil; set where steps are written, e.g. DirSink{Dir: OUT}")
	}
	if c.Grace < 0 {
		add("Grace %v: must not be negative (0 means %v)", c.Grace, DefaultGrace)
	}
	return errors.Join(errs...)
}

// Farm runs the steps of a run: it schedules each step's rollouts with
// bounded concurrency, scores them and, once every rollout of the step is
// in, computes advantages and writes the step through the sink.
type Farm struct {
	cfg     Config
	tasks   []Task
	scoring Scoring
	log     *slog.Logger
	// st is the run's store, nil without one.
	st *storeAccess
	// train is the policies' state with Training.
	train trainingState
	// dispatcher runs each step's rollouts (in process, or through the
	// store's queue).
	dispatcher dispatcher
	// pool bounds the rollouts in flight across all steps running at once.
	pool *pool.Pool
	// progressMu keeps OnProgress calls one at a time when steps overlap.
	progressMu sync.Mutex
	// restart holds the rollouts in flight under PartialRestart.
	restart restartGate
}

// progress reports p to OnProgress, one call at a time.
func (f *Farm) progress(p Progress) {
	if f.cfg.OnProgress == nil {
		return
	}
	f.progressMu.Lock()
	defer f.progressMu.Unlock()
	f.cfg.OnProgress(p)
}

// New validates cfg and the tasks: at least BatchSize tasks (a step
// never holds one query twice) with distinct, non-empty ids.
func New(cfg Config, tasks []Task) (*Farm, error) {
	errs := []error{cfg.Validate()}
	if len(tasks) == 0 {
		errs = append(errs, errors.New("tasks: none given"))
	} else if cfg.BatchSize > len(tasks) {
		errs = append(errs, fmt.Errorf("BatchSize %d: more than the %d tasks; a step would hold a query twice (lower BatchSize or add tasks)", cfg.BatchSize, len(tasks)))
	}
	seen := make(map[string]bool, len(tasks))
	for i, t := range tasks {
		if t.ID == "" {
			errs = append(errs, fmt.Errorf("tasks: task %d has an empty id", i))
		} else if seen[t.ID] {
			errs = append(errs, fmt.Errorf("tasks: duplicate id %q", t.ID))
		}
		seen[t.ID] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rollout farm: %w", err)
	}
	if cfg.ExpertFallback == "" {
		cfg.ExpertFallback = rollout.DefaultExpertFallback
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Farm{
		cfg:     cfg,
		tasks:   append([]Task(nil), tasks...),
		scoring: newScoring(cfg),
		log:     log,
	}
	if cfg.Store != nil {
		f.st = &storeAccess{store: cfg.Store, log: log}
	}
	f.pool = pool.New(cfg.Concurrency)
	f.dispatcher = inProcess{f}
	if cfg.Queue {
		f.dispatcher = queued{f}
	}
	f.train = trainingState{versions: map[rollout.Role]int64{}}
	return f, nil
}

// Run runs the configured steps in order and returns their summaries. When
// ctx is cancelled, no further rollout starts; in-flight rollouts get the
// grace period to finish and are then cancelled and abandoned. A step whose
// rollouts did not all finish writes no files; Run then returns the
// summaries of the completed steps and an error wrapping the context's
// cause. Any other error (the sink failing, a malformed trajectory
// reaching sample building) also stops the run.
func (f *Farm) Run(ctx context.Context) ([]rollout.StepSummary, error) {
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
	written, err := f.openRun(ctx)
	if err != nil {
		return nil, err
	}
	if err := f.restoreTraining(ctx, lastWritten(written, f.cfg.Steps)); err != nil {
		return nil, err
	}
	var (
		sums  []rollout.StepSummary
		prevD []int
	)
	fin := f.newFinisher(ctx, &warn)
	if f.cfg.Training != nil && f.cfg.Training.StreamGroups {
		return f.runStreamed(ctx, written, fin)
	}
	// With asynchronous training (and rollouts run here, not by workers)
	// a step's rollouts start while the previous step's last ones finish:
	// the slots its tail frees go to the next step at once.
	overlap := fin.staleness > 0 && !f.cfg.Queue
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type launched struct {
		done chan struct{}
		r    stepRollouts
		err  error
	}
	var pending *launched
	// assemblePending writes the step whose rollouts were launched last.
	assemblePending := func() error {
		if pending == nil {
			return nil
		}
		p := pending
		pending = nil
		<-p.done
		if p.err != nil {
			return p.err
		}
		out, err := f.writeStep(ctx, p.r, prevD)
		if err != nil {
			return err
		}
		prevD = out.d
		return fin.finish(out)
	}
	fail := func(err error) ([]rollout.StepSummary, error) {
		cancel()
		if pending != nil {
			<-pending.done
		}
		return fin.stop(sums), err
	}
	for step := 1; step <= f.cfg.Steps; step++ {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("rollout run interrupted before step %d: %w", step, context.Cause(ctx)))
		}
		if rec, ok := written[step]; ok {
			f.log.Info("step already written: skipped", "step", step, "files", rec.Files)
			sums = append(sums, *rec.Summary)
			prevD = rec.ObservedD
			fin.markWritten(step)
			continue
		}
		// Admission: at most MaxStaleness steps sampled ahead of training.
		if err := fin.waitFinished(ctx, step-1-fin.staleness); err != nil {
			return fail(err)
		}
		if err := f.awaitPeers(ctx, step-fin.staleness); err != nil {
			return fail(err)
		}
		if !overlap {
			out, err := f.runStep(ctx, step, prevD)
			if err != nil {
				return fail(err)
			}
			if err := fin.finish(out); err != nil {
				return fail(err)
			}
			prevD = out.d
			continue
		}
		next := &launched{done: make(chan struct{})}
		go func() {
			defer close(next.done)
			next.r, next.err = f.rolloutStep(ctx, step)
		}()
		err := assemblePending()
		pending = next
		if err != nil {
			return fail(err)
		}
	}
	if err := assemblePending(); err != nil {
		return fail(err)
	}
	sums = fin.stop(sums)
	return sums, fin.err()
}

// stepOutcome is what a written step leaves for the run and its store.
type stepOutcome struct {
	summary rollout.StepSummary
	// d are the step's d_k in plan order.
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

// runStep runs, assembles and writes one step.
func (f *Farm) runStep(ctx context.Context, step int, prevD []int) (stepOutcome, error) {
	r, err := f.rolloutStep(ctx, step)
	if err != nil {
		return stepOutcome{}, err
	}
	return f.writeStep(ctx, r, prevD)
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
}

// rolloutStep schedules a step at the current policy versions and runs
// its rollouts (those a resumed run has not stored already).
func (f *Farm) rolloutStep(ctx context.Context, step int) (stepRollouts, error) {
	start := time.Now()
	version, executorVersion := f.policyVersions()
	plan := planStep(f.cfg.Run, f.cfg.Seed, step, f.cfg.BatchSize, f.cfg.GroupSize, f.tasks, version, executorVersion)
	plan.restarts = new(atomic.Int64)
	f.log.Info("step start", "step", step, "queries", len(plan.tasks), "rollouts", len(plan.units), "policy_version", version, "executor_policy_version", executorVersion)
	f.cfg.Metrics.stepStarted(version)
	var (
		results  stepResults = make(memResults, len(plan.units))
		finished map[int]resultDigest
		digests  []resultDigest
		err      error
	)
	if f.st != nil {
		results = storedResults{st: f.st, plan: &plan}
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

	d := make([]int, len(digests))
	for i := range digests {
		d[i] = digests[i].D
	}
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
	sum := rollout.StepSummary{Step: step, PolicyVersion: version, ExecutorPolicyVersion: executorVersion, Queries: len(plan.tasks)}
	acc := newSummaryAcc(&sum)
	w, err := f.beginStep(wctx, step)
	if err != nil {
		return stepOutcome{}, err
	}
	batches := f.trainedBatches()
	asm, err := assembleStep(wctx, gcfg, builder, plan, f.cfg.GroupSize, results, acc, func(files rollout.StepFiles) error {
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
		"executor_samples", sum.ExecutorSamples, "drift_events", sum.DriftEvents, "wall_seconds", sum.WallSeconds,
		"rollouts_per_second", sum.RolloutsPerSecond)
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
