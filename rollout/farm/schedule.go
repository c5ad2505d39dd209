package farm

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// runUnits carries out every rollout task of plan with at most
// Concurrency in flight and returns the results in plan order
// (results[i] is plan.units[i]), whatever order they finished in.
//
// Rollouts run under a context that the run's cancellation does not reach
// directly: when ctx is cancelled, no further rollout starts and those in
// flight get the grace period; when it ends, their context is cancelled and
// runUnits returns without waiting for them (they hold no shared state
// besides their own result slot and a buffered channel, so they wind down
// on their own). An interrupted step returns an error wrapping ctx's cause,
// unless every rollout of the step had started and finished within the
// grace period, in which case the step is complete.
func (f *Farm) runUnits(ctx context.Context, plan stepPlan) ([]RolloutResult, error) {
	n := len(plan.units)
	results := make([]RolloutResult, n)
	done := make(chan int, n)
	unitCtx, cancelUnits := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelUnits(nil)

	// The dispatcher starts rollouts in plan order as slots free up and
	// reports how many it started once it stops.
	slots := make(chan struct{}, f.cfg.Concurrency)
	launched := make(chan int, 1)
	go func() {
		started := 0
		defer func() { launched <- started }()
		for i := range plan.units {
			select {
			case <-ctx.Done():
				return
			case slots <- struct{}{}:
			}
			// A cancellation that raced with a free slot still stops here.
			if ctx.Err() != nil {
				<-slots
				return
			}
			started++
			f.cfg.Metrics.started()
			go func() {
				defer func() { <-slots }()
				results[i] = Execute(unitCtx, f.cfg.Runner, f.scoring, plan.units[i], plan.tasks[i/f.cfg.GroupSize])
				done <- i
			}()
		}
	}()

	start := time.Now()
	p := Progress{Step: plan.step, Total: n}
	var rewardSum float64
	finish := func(i int) {
		f.cfg.Metrics.finished(results[i].Failed())
		p.Done++
		rewardSum += results[i].Scores.Main
		if results[i].Failed() {
			p.Errors++
			f.log.Warn("rollout failed", "rollout", plan.units[i].ID(), "error", firstLine(results[i].Error))
		}
		p.MeanReward = rewardSum / float64(p.Done)
		if s := time.Since(start).Seconds(); s > 0 {
			p.Rate = float64(p.Done) / s
		}
		if f.cfg.OnProgress != nil {
			f.cfg.OnProgress(p)
		}
	}

	// Until a cancellation says otherwise, every rollout is started.
	started, ctxDone := n, ctx.Done()
	var grace <-chan time.Time
	for p.Done < started {
		select {
		case i := <-done:
			finish(i)
		case <-ctxDone:
			ctxDone = nil
			started = <-launched
			f.log.Warn("rollout step interrupted: waiting for in-flight rollouts", "step", plan.step,
				"in_flight", started-p.Done, "not_started", n-started, "grace", f.cfg.Grace, "cause", context.Cause(ctx))
			t := time.NewTimer(f.cfg.Grace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			cause := context.Cause(ctx)
			cancelUnits(fmt.Errorf("rollout abandoned after the %v grace period: %w", f.cfg.Grace, cause))
			f.log.Warn("rollout step abandoned", "step", plan.step, "abandoned", started-p.Done)
			return nil, fmt.Errorf("rollout step %d interrupted, %d rollouts abandoned after the %v grace period: %w", plan.step, started-p.Done, f.cfg.Grace, cause)
		}
	}
	if started < n {
		return nil, fmt.Errorf("rollout step %d interrupted after %d of %d rollouts: %w", plan.step, started, n, context.Cause(ctx))
	}
	return results, nil
}

// firstLine returns the first line of s (a panic's stack trace stays in the
// result, out of the log line).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
