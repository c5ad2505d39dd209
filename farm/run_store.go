package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// RunSpec is what a run's record in the store holds: everything a worker
// needs to serve the run besides secrets, which each process reads from
// its own environment.
type RunSpec struct {
	// Config is the run's configuration as its command wrote it (for
	// mgrpo: run.Config as JSON), opaque to the farm.
	Config json.RawMessage `json:"config"`
	// Tasks are the run's questions with their gold answers.
	Tasks []Task `json:"tasks"`
}

// ReadRunSpec returns the spec of a run record, refusing a record of
// another layout version than this program's.
func ReadRunSpec(rec store.RunRecord) (RunSpec, error) {
	var spec RunSpec
	if rec.Version != store.RunRecordVersion {
		return spec, fmt.Errorf("run %q was recorded with run-record version %d and this program serves version %d: run a worker of the same mgrpo version as the coordinator", rec.ID, rec.Version, store.RunRecordVersion)
	}
	if err := json.Unmarshal(rec.Config, &spec); err != nil {
		return spec, fmt.Errorf("run %q: record: %w", rec.ID, err)
	}
	if len(spec.Tasks) == 0 {
		return spec, fmt.Errorf("run %q: record holds no tasks", rec.ID)
	}
	return spec, nil
}

// newScoring returns the scoring of a farm configuration.
func newScoring(cfg Config) Scoring {
	fallback := cfg.ExpertFallback
	if fallback == "" {
		fallback = rollout.DefaultExpertFallback
	}
	return Scoring{Mode: cfg.Mode, Weights: cfg.Weights, Scorer: cfg.Scorer, Expert: cfg.Expert, ExpertFallback: fallback}
}

// openRun creates the run's record in the store, or with Resume finds it,
// and returns the steps already written, by step. A run of which the store
// holds steps is refused unless resuming; a resumed run must have the
// configuration it was started with.
func (f *Farm) openRun(ctx context.Context) (map[int]store.StepRecord, error) {
	if f.st == nil {
		return nil, nil
	}
	run := f.cfg.Run
	var steps []store.StepRecord
	err := f.st.retry(ctx, "read the run's steps", func(ctx context.Context) error {
		var err error
		steps, err = f.st.store.Steps(ctx, run)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(steps) > 0 && !f.cfg.Resume {
		return nil, fmt.Errorf("%w: the store already holds %d steps of run %q: continue it with --resume, or choose a new --out or run name", ErrRunExists, len(steps), run)
	}
	spec, err := json.Marshal(RunSpec{Config: f.cfg.RunConfig, Tasks: f.tasks})
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	rec := store.RunRecord{ID: run, Version: store.RunRecordVersion, Config: spec, Created: time.Now().UTC()}
	err = f.st.retry(ctx, "create the run's record", func(ctx context.Context) error { return f.st.store.CreateRun(ctx, rec) })
	if errors.Is(err, store.ErrConflict) {
		return nil, fmt.Errorf("%w: run %q is stored with another configuration or other tasks than this one: resume it with the flags and config it was started with, or choose a new --out or run name (%w)", ErrRunExists, run, err)
	}
	if err != nil {
		return nil, err
	}
	written := map[int]store.StepRecord{}
	for _, s := range steps {
		if s.Status == store.StepWritten && s.Summary != nil {
			written[s.Step] = s
		}
	}
	if f.cfg.Resume && f.cfg.RebuildFrom != "" && len(steps) == 0 {
		if written, err = f.rebuildSteps(ctx, f.cfg.RebuildFrom); err != nil {
			return nil, err
		}
	}
	if f.cfg.Resume {
		f.log.Info("resuming run", "run", run, "steps_written", len(written))
	}
	return written, nil
}

// ErrRunExists: the store holds the run already and it cannot be started
// again as asked.
var ErrRunExists = errors.New("run exists")

// scheduleStep records the step as scheduled and returns the results the
// store already holds for it (a resumed or restarted run), by plan index.
func (f *Farm) scheduleStep(ctx context.Context, plan stepPlan) (map[int]resultDigest, error) {
	rec := store.StepRecord{Step: plan.step, Status: store.StepScheduled, Rollouts: len(plan.units)}
	if err := f.st.retry(ctx, fmt.Sprintf("record step %d", plan.step), func(ctx context.Context) error {
		return f.st.store.PutStep(ctx, f.cfg.Run, rec)
	}); err != nil {
		return nil, err
	}
	have, err := f.st.digests(ctx, f.cfg.Run, plan.step)
	if err != nil {
		return nil, err
	}
	finished := make(map[int]resultDigest, len(have))
	retry := 0
	for i, u := range plan.units {
		if d, ok := have[u.ID()]; ok {
			if d.Infra && d.Retries < f.cfg.Failures.RolloutRetries {
				// Stored as an infra failure with retries left: run it
				// again as its next retry, never keep it as a zero.
				plan.prior[i] = d
				retry++
				continue
			}
			finished[i] = d
		}
	}
	if len(finished) > 0 || retry > 0 {
		f.log.Info("step resumed: rollouts already done are kept", "step", plan.step, "done", len(finished), "retried", retry, "rollouts", len(plan.units))
	}
	return finished, nil
}

// recordStep publishes a written step in the store: its statistics (what
// the executors' trainer consumes), its record with where its files are,
// and then drops its results.
func (f *Farm) recordStep(ctx context.Context, out stepOutcome) error {
	if f.st == nil {
		return nil
	}
	step, run := out.summary.Step, f.cfg.Run
	if err := f.st.retry(ctx, fmt.Sprintf("store the statistics of step %d", step), func(ctx context.Context) error {
		return f.st.store.PutStats(ctx, run, step, out.stats)
	}); err != nil {
		return err
	}
	if err := f.handOverSamples(ctx, step); err != nil {
		return err
	}
	sum := out.summary
	rec := store.StepRecord{Step: step, Status: store.StepWritten, Rollouts: sum.Rollouts, DBar: sum.DBar,
		ObservedD: out.d, Files: f.stepFiles(step), Summary: &sum}
	if err := f.st.retry(ctx, fmt.Sprintf("record step %d as written", step), func(ctx context.Context) error {
		return f.st.store.PutStep(ctx, run, rec)
	}); err != nil {
		return err
	}
	if out.draws != nil {
		for _, n := range out.draws {
			if err := f.st.dropDrawResults(ctx, run, n); err != nil {
				return err
			}
		}
		return nil
	}
	return f.st.retry(ctx, fmt.Sprintf("drop the results of step %d", step), func(ctx context.Context) error {
		return f.st.store.DeleteResults(ctx, run, step)
	})
}

// handOverSamples puts the samples of the roles another process trains
// (Training.Peers) into the store, before the step shows as written, so
// that process reads them from the store wherever it runs.
func (f *Farm) handOverSamples(ctx context.Context, step int) error {
	if f.cfg.Training == nil {
		return nil
	}
	for _, role := range f.cfg.Training.Peers {
		name := samplesFile(role)
		data, err := os.ReadFile(filepath.Join(f.stepFiles(step), name))
		if err != nil {
			return fmt.Errorf("hand the %s samples of step %d to the other side: %w", role, step, err)
		}
		if err := f.st.retry(ctx, fmt.Sprintf("store %s of step %d", name, step), func(ctx context.Context) error {
			return f.st.store.PutStepFile(ctx, f.cfg.Run, step, name, data)
		}); err != nil {
			return err
		}
	}
	return nil
}

// samplesFile is the step file of role's samples.
func samplesFile(role rollout.Role) string {
	if role == rollout.RoleExecutor {
		return rollout.ExecutorFile
	}
	return rollout.PlannerFile
}

// stepFiles names where step's files are, for the step record.
func (f *Farm) stepFiles(step int) string {
	if d, ok := f.cfg.Sink.(interface{ StepLocation(int) string }); ok {
		return d.StepLocation(step)
	}
	return ""
}

// beginStep starts writing a step through the sink: piece by piece when
// it streams, else gathered and written whole on Commit. A resumed run
// whose step directory was written before the run was killed (its record
// not yet updated) re-derives the step without writing it again.
func (f *Farm) beginStep(ctx context.Context, step int) (rollout.StepWriter, error) {
	ss, ok := f.cfg.Sink.(rollout.StreamSink)
	if !ok {
		return &gatherWriter{sink: f.cfg.Sink, step: step}, nil
	}
	w, err := ss.BeginStep(ctx, step)
	if errors.Is(err, rollout.ErrStepExists) && f.cfg.Resume {
		f.log.Info("step files were written before the run stopped: kept as they are", "step", step)
		return discardWriter{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rollout step %d: %w", step, err)
	}
	return w, nil
}

// gatherWriter collects a step for a sink that writes steps whole.
type gatherWriter struct {
	sink  rollout.Sink
	step  int
	files rollout.StepFiles
}

func (g *gatherWriter) Append(_ context.Context, f rollout.StepFiles) error {
	g.files.Planner = append(g.files.Planner, f.Planner...)
	g.files.Executor = append(g.files.Executor, f.Executor...)
	g.files.Stats = append(g.files.Stats, f.Stats...)
	g.files.Rollouts = append(g.files.Rollouts, f.Rollouts...)
	g.files.RolloutsCompact = f.RolloutsCompact
	return nil
}

func (g *gatherWriter) Commit(ctx context.Context) error {
	return g.sink.WriteStep(ctx, g.step, g.files)
}
func (g *gatherWriter) Abort() {}

// discardWriter drops a step already on disk.
type discardWriter struct{}

func (discardWriter) Append(context.Context, rollout.StepFiles) error { return nil }
func (discardWriter) Commit(context.Context) error                    { return nil }
func (discardWriter) Abort()                                          {}
