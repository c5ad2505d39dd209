package farm

import (
	"context"
	"fmt"

	"github.com/mgrpo/mgrpo/store"
)

// stepPolicy is how a run's steps are formed: which rollouts a step holds
// and when they run. It is chosen once, in New (newPolicyFor), and made
// for each Run; the pipeline (Run) calls its methods from one goroutine,
// in this order: resume once, form for each step not written yet, in
// step order, flush once, and stop once at the end or on the first error.
type stepPolicy interface {
	// resume takes up what a resumed run's store holds besides the steps
	// written (which the pipeline skips): a streamed run's manifests and
	// draws. Without a store it does nothing.
	resume(ctx context.Context, written map[int]store.StepRecord) error
	// form admits step (the staleness rule, the decoupled peers), starts
	// its rollouts and returns the steps whose rollouts are all in, in
	// step order, for the pipeline to assemble: step itself, or with
	// overlapping steps the one before it (none for the first). It fails
	// with an error wrapping ctx's cause once ctx ends.
	form(ctx context.Context, step int) ([]stepRollouts, error)
	// flush returns the steps formed and not yet returned once their
	// rollouts are all in (after the last form).
	flush(ctx context.Context) ([]stepRollouts, error)
	// stop ends the rollouts it started and did not return: with err (the
	// run failed or was interrupted) they get the grace period, without
	// it (the run is over) they are abandoned at once. It waits for the
	// goroutines it started.
	stop(err error)
}

// newPolicyFor returns the constructor of cfg's step policy: the steps
// of a given schedule (Schedule), streamed groups (Training.StreamGroups),
// steps overlapped by S (Training.MaxStaleness S > 0, rollouts run here),
// or fixed steps.
func newPolicyFor(cfg Config) func(ctx context.Context, f *Farm, fin *finisher) stepPolicy {
	t := cfg.Training
	switch {
	case cfg.Schedule != nil:
		return newScheduledSteps
	case t != nil && t.StreamGroups:
		return newStreamedSteps
	case t != nil && t.MaxStaleness > 0 && !cfg.Queue:
		return newOverlappedSteps
	}
	return newFixedSteps
}

// fixedSteps runs each step's rollouts once it is admitted and returns it
// when they are all in: the next step's rollouts start once this one is
// written (and, with S = 0, trained).
type fixedSteps struct {
	f   *Farm
	fin *finisher
}

func newFixedSteps(_ context.Context, f *Farm, fin *finisher) stepPolicy {
	return &fixedSteps{f: f, fin: fin}
}

func (p *fixedSteps) resume(context.Context, map[int]store.StepRecord) error { return nil }

func (p *fixedSteps) form(ctx context.Context, step int) ([]stepRollouts, error) {
	if err := p.f.admit(ctx, p.fin, step); err != nil {
		return nil, err
	}
	r, err := p.f.rolloutStep(ctx, step)
	if err != nil {
		return nil, err
	}
	return []stepRollouts{r}, nil
}

func (p *fixedSteps) flush(context.Context) ([]stepRollouts, error) { return nil, nil }
func (p *fixedSteps) stop(error)                                    {}

// admit checks ctx and waits until step may start: at most MaxStaleness
// steps sampled ahead of training, and the decoupled peers' sides have
// trained what it needs.
func (f *Farm) admit(ctx context.Context, fin *finisher, step int) error {
	if ctx.Err() != nil {
		return fmt.Errorf("rollout run interrupted before step %d: %w", step, context.Cause(ctx))
	}
	if err := fin.waitFinished(ctx, step-1-fin.staleness); err != nil {
		return err
	}
	return f.awaitPeers(ctx, step-fin.staleness)
}

// overlappedSteps starts a step's rollouts while the previous step's last
// ones finish (asynchronous training, rollouts run here): the slots its
// tail frees go to the next step at once. form(t) launches step t and
// returns step t−1 once its rollouts are in.
type overlappedSteps struct {
	f   *Farm
	fin *finisher
	// ctx is the run's, cancelled by stop so the step in flight ends.
	ctx     context.Context
	cancel  context.CancelFunc
	pending *launchedStep
}

// launchedStep is a step whose rollouts run in their own goroutine.
type launchedStep struct {
	done chan struct{}
	r    stepRollouts
	err  error
}

func newOverlappedSteps(ctx context.Context, f *Farm, fin *finisher) stepPolicy {
	ctx, cancel := context.WithCancel(ctx)
	return &overlappedSteps{f: f, fin: fin, ctx: ctx, cancel: cancel}
}

func (p *overlappedSteps) resume(context.Context, map[int]store.StepRecord) error { return nil }

func (p *overlappedSteps) form(ctx context.Context, step int) ([]stepRollouts, error) {
	if err := p.f.admit(p.ctx, p.fin, step); err != nil {
		return nil, err
	}
	next := &launchedStep{done: make(chan struct{})}
	go func() {
		defer close(next.done)
		next.r, next.err = p.f.rolloutStep(p.ctx, step)
	}()
	ready, err := p.flush(ctx)
	p.pending = next
	return ready, err
}

func (p *overlappedSteps) flush(context.Context) ([]stepRollouts, error) {
	if p.pending == nil {
		return nil, nil
	}
	l := p.pending
	p.pending = nil
	<-l.done
	if l.err != nil {
		return nil, l.err
	}
	return []stepRollouts{l.r}, nil
}

func (p *overlappedSteps) stop(error) {
	p.cancel()
	if p.pending != nil {
		<-p.pending.done
	}
}
