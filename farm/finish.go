package farm

import (
	"context"
	"fmt"
	"sync"

	"github.com/mgrpo/mgrpo/rollout"
)

// finisher ends written steps in step order: their training (with
// Training), summary and record. With Training.MaxStaleness S > 0 it runs
// beside the rollouts: the next steps' rollouts go on while a step trains
// and syncs, at most S steps ahead of the last trained one (the admission
// rule: step t starts once step t-1-S is trained), so every trained token
// was sampled at most S versions behind the trainer's. With S = 0 each step
// is finished before the next starts: the strictly on-policy loop.
type finisher struct {
	f         *Farm
	ctx       context.Context
	warn      *warnings
	staleness int

	jobs chan stepOutcome
	wg   sync.WaitGroup

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when finished or failure changes
	finished int           // the highest step finished
	failure  error
	sums     []rollout.StepSummary
}

func (f *Farm) newFinisher(ctx context.Context, warn *warnings) *finisher {
	fin := &finisher{f: f, ctx: ctx, warn: warn, changed: make(chan struct{})}
	if f.cfg.Training != nil {
		fin.staleness = f.cfg.Training.MaxStaleness
	}
	if fin.staleness > 0 {
		fin.jobs = make(chan stepOutcome, fin.staleness)
		fin.wg.Add(1)
		go func() {
			defer fin.wg.Done()
			for out := range fin.jobs {
				if fin.err() != nil {
					continue
				}
				fin.done(fin.end(out))
			}
		}()
	}
	return fin
}

// finish ends the step now (S = 0) or hands it to the background (S > 0).
func (fin *finisher) finish(out stepOutcome) error {
	if fin.jobs == nil {
		return fin.done(fin.end(out))
	}
	if err := fin.err(); err != nil {
		return err
	}
	fin.jobs <- out
	return nil
}

// end trains (with Training) and records one step.
func (fin *finisher) end(out stepOutcome) (rollout.StepSummary, error) {
	f, ctx := fin.f, fin.ctx
	step := out.summary.Step
	if f.cfg.Training != nil {
		if err := f.trainStep(ctx, &out); err != nil {
			return out.summary, err
		}
	}
	sum := out.summary
	if err := f.cfg.Sink.WriteSummary(context.WithoutCancel(ctx), sum); err != nil {
		return sum, fmt.Errorf("rollout step %d: %w", step, err)
	}
	if err := f.recordStep(context.WithoutCancel(ctx), out); err != nil {
		return sum, fmt.Errorf("rollout step %d: %w", step, err)
	}
	fin.warn.afterStep(sum)
	if f.cfg.OnStep != nil {
		f.cfg.OnStep(sum)
	}
	return sum, nil
}

// done records the outcome of ending a step.
func (fin *finisher) done(sum rollout.StepSummary, err error) error {
	fin.mu.Lock()
	defer fin.mu.Unlock()
	if err != nil {
		if fin.failure == nil {
			fin.failure = err
		}
	} else {
		fin.sums = append(fin.sums, sum)
		fin.finished = sum.Step
	}
	close(fin.changed)
	fin.changed = make(chan struct{})
	return err
}

// err returns the first failure of a step's ending.
func (fin *finisher) err() error {
	fin.mu.Lock()
	defer fin.mu.Unlock()
	return fin.failure
}

// waitFinished waits until step (and every step before it) is finished;
// a step below 1, or one a resumed run found written, needs no wait.
func (fin *finisher) waitFinished(ctx context.Context, step int) error {
	if fin.jobs == nil || step < 1 {
		return nil
	}
	for {
		fin.mu.Lock()
		finished, failure, changed := fin.finished, fin.failure, fin.changed
		fin.mu.Unlock()
		if failure != nil {
			return failure
		}
		if finished >= step {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for step %d's training: %w", step, context.Cause(ctx))
		case <-changed:
		}
	}
}

// markWritten counts a step a resumed run found written as finished.
func (fin *finisher) markWritten(step int) {
	fin.mu.Lock()
	defer fin.mu.Unlock()
	fin.finished = max(fin.finished, step)
}

// stop waits for the steps handed over, and returns sums (the steps found
// written) followed by those finished.
func (fin *finisher) stop(sums []rollout.StepSummary) []rollout.StepSummary {
	if fin.jobs != nil {
		close(fin.jobs)
		fin.jobs = nil
		fin.wg.Wait()
	}
	fin.mu.Lock()
	defer fin.mu.Unlock()
	out := append(sums, fin.sums...)
	fin.sums = nil
	return out
}

// state returns the highest step finished, a channel closed when that or
// the failure changes, and the first failure.
func (fin *finisher) state() (finished int, changed <-chan struct{}, failure error) {
	fin.mu.Lock()
	defer fin.mu.Unlock()
	return fin.finished, fin.changed, fin.failure
}
