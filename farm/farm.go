package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	// Sampling names each role's sampling settings (planner, executor) for
	// every step summary (StepSummary.Sampling); nil names none.
	Sampling map[string]rollout.SamplingRecord
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
	// Failures is what the farm does with infra failures: retries, the
	// exclusion of their groups and when a run stops as useless. The zero
	// value is the behaviour from before the failure classes.
	Failures FailurePolicy
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
	// ConcurrencyLimits, when set (--concurrency auto), returns each model
	// role's adaptive request limit now: shown in Progress.Limits and as
	// mgrpo_farm_concurrency_limit.
	ConcurrencyLimits func() map[string]int64

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
	// RebuildFrom, with Resume, names the directory whose step files
	// (step-NNNNNN/stats.jsonl and summary.jsonl) rebuild the store's view
	// of a run the store lost: each step written there is recorded as
	// written, with its statistics from the files, and not rerun ("": none).
	RebuildFrom string
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
	// Schedule, when set, forms the steps instead of the step policies:
	// step t runs Schedule[t−1]'s rollouts at its versions (see
	// ScheduledStep; `mgrpo replay` gives a recorded run's). It gives
	// every step; not with Training or Queue.
	Schedule []ScheduledStep
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
		if t.PinVersions && (t.PartialRollouts == PartialRestart || t.StreamGroups || c.Queue || len(t.Peers) > 0) {
			add("Training.PinVersions: only with asynchronous fixed steps run here (not with PartialRollouts restart, StreamGroups, Queue or Peers)")
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
	c.Failures.validate(add)
	c.validateSchedule(add)
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
	// newPolicy makes the run's step policy (fixed, overlapped, streamed).
	newPolicy func(ctx context.Context, f *Farm, fin *finisher) stepPolicy
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
	if f.cfg.ConcurrencyLimits != nil {
		p.Limits = f.cfg.ConcurrencyLimits()
	}
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
		f.st = &storeAccess{store: cfg.Store, log: log, retries: cfg.Failures.RolloutRetries}
	}
	f.pool = pool.New(cfg.Concurrency)
	if cfg.Metrics != nil && cfg.ConcurrencyLimits != nil {
		cfg.Metrics.watchLimits(cfg.ConcurrencyLimits)
	}
	f.newPolicy = newPolicyFor(cfg)
	f.dispatcher = dispatcherFor(cfg, f)
	f.train = trainingState{versions: map[rollout.Role]int64{}}
	return f, nil
}
