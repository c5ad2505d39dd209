package farm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// runUnits carries out every rollout task of plan not already finished
// with at most Concurrency in flight, handing each result to results as it
// finishes, and returns the digests of all of them in plan order
// (digests[i] is plan.units[i]'s), whatever order they finished in.
//
// Rollouts run under a context that the run's cancellation does not reach
// directly: when ctx is cancelled, no further rollout starts and those in
// flight get the grace period; when it ends, their context is cancelled and
// runUnits returns without waiting for them (they hold no shared state
// besides their own result slot and a buffered channel, so they wind down
// on their own). An abandoned rollout's result is not stored: once
// runUnits returns, nothing more of this step reaches the store, so a
// resumed run (or a caller counting what is stored) sees what the run
// stopped with, and redoes the rest. An interrupted step returns an error wrapping ctx's cause,
// unless every rollout of the step had started and finished within the
// grace period, in which case the step is complete.
func (f *Farm) runUnits(ctx context.Context, plan stepPlan, results stepResults, finished map[int]resultDigest) ([]resultDigest, error) {
	n := len(plan.units)
	digests := make([]resultDigest, n)
	putErrs := make([]error, n)
	// failures holds the first line of each failed rollout's error, for
	// the log once its result has gone to the store.
	failures := make([]string, n)
	done := make(chan int, n)
	// puts closes, under its lock, when the step is abandoned: a result
	// put in progress then finishes first, later ones are dropped.
	var puts struct {
		sync.RWMutex
		closed bool
	}
	units := f.pool.NewGroup(ctx, f.cfg.Grace, func(cause error) error {
		return fmt.Errorf("rollout abandoned after the %v grace period: %w", f.cfg.Grace, cause)
	})
	defer units.Close()

	// The dispatcher starts rollouts in plan order as slots free up and
	// reports how many it started once it stops. The slots are the
	// farm's, shared by the steps whose rollouts overlap (asynchronous
	// training).
	launched := make(chan int, 1)
	// A nil f.st makes no pending retries (pendingRetries checks it
	// before the function is ever called).
	pending := f.pendingRetries(func(ctx context.Context, r *RolloutResult) error {
		_, err := f.st.putResult(ctx, r)
		return err
	})
	go func() {
		started := 0
		defer func() { launched <- started }()
		for i := range plan.units {
			if _, ok := finished[i]; ok {
				continue
			}
			if units.Go(func(unitCtx context.Context) {
				f.cfg.Metrics.started()
				r := executeWithRetries(unitCtx, ctx, f.cfg.Failures, plan.prior[i], f.cfg.Metrics, f.log, pending(unitCtx), func(c context.Context) RolloutResult {
					return f.executeUnit(c, plan, i)
				})
				digests[i] = digestOf(&r)
				failures[i] = firstLine(r.Error)
				puts.RLock()
				if !puts.closed {
					putErrs[i] = results.put(unitCtx, i, &r)
				}
				puts.RUnlock()
				done <- i
			}) != nil {
				return
			}
			started++
		}
	}()

	start := time.Now()
	p := Progress{Step: plan.step, Total: n}
	var rewardSum float64
	for i, d := range finished {
		digests[i] = d
		p.Done++
		rewardSum += d.Main
		p.Drifts, p.HistoryEdits = p.Drifts+d.Drifts, p.HistoryEdits+d.HistoryEdits
		if d.Failed {
			p.Errors++
		}
	}
	var putErr error
	finish := func(i int) {
		d := digests[i]
		f.cfg.Metrics.finished(d.Failed, d.kind())
		if putErrs[i] != nil && putErr == nil {
			putErr = putErrs[i]
		}
		p.Done++
		rewardSum += d.Main
		p.Drifts, p.HistoryEdits = p.Drifts+d.Drifts, p.HistoryEdits+d.HistoryEdits
		if d.Failed {
			p.Errors++
			f.log.Warn("rollout failed", "rollout", plan.units[i].ID(), "error", failures[i])
		}
		p.MeanReward = rewardSum / float64(p.Done)
		if s := time.Since(start).Seconds(); s > 0 {
			p.Rate = float64(p.Done) / s
		}
		if f.cfg.OnProgress != nil {
			f.progress(p)
		}
	}

	// Until a cancellation says otherwise, every rollout is started.
	started, ctxDone := n, ctx.Done()
	var abandoned <-chan struct{}
	for p.Done < started {
		select {
		case i := <-done:
			finish(i)
		case <-ctxDone:
			ctxDone = nil
			started = <-launched + len(finished)
			f.log.Warn("rollout step interrupted: waiting for in-flight rollouts", "step", plan.step,
				"in_flight", started-p.Done, "not_started", n-started, "grace", f.cfg.Grace, "cause", context.Cause(ctx))
			abandoned = units.Abandoned()
		case <-abandoned:
			puts.Lock()
			puts.closed = true
			puts.Unlock()
			cause := context.Cause(ctx)
			f.log.Warn("rollout step abandoned", "step", plan.step, "abandoned", started-p.Done)
			return nil, fmt.Errorf("rollout step %d interrupted, %d rollouts abandoned after the %v grace period: %w", plan.step, started-p.Done, f.cfg.Grace, cause)
		}
	}
	if started < n {
		return nil, fmt.Errorf("rollout step %d interrupted after %d of %d rollouts: %w", plan.step, started, n, context.Cause(ctx))
	}
	if putErr != nil {
		return nil, fmt.Errorf("rollout step %d: %w", plan.step, putErr)
	}
	return digests, nil
}

// executeUnit carries out rollout i of plan. Under PartialRestart a weight
// update that reaches the servers while it runs cancels it, and it runs
// again from scratch, at the versions then current, once the update is
// done (counted in plan.restarts); a rollout is restarted at most
// MaxStaleness times, as only the updates of the steps before it that
// were not trained when it was admitted can come while it runs.
func (f *Farm) executeUnit(ctx context.Context, plan stepPlan, i int) RolloutResult {
	task, t := plan.units[i], plan.tasks[i/f.cfg.GroupSize]
	ctx = f.pinned(ctx, task)
	if f.cfg.Training == nil || f.cfg.Training.PartialRollouts != PartialRestart {
		return Execute(ctx, f.cfg.Runner, f.scoring, task, t)
	}
	for restarts := 0; ; restarts++ {
		rctx, id, err := f.restart.begin(ctx)
		if err != nil {
			// Abandoned while an update held it: the result records why.
			return Execute(ctx, f.cfg.Runner, f.scoring, task, t)
		}
		if restarts > 0 {
			task.PolicyVersion, task.ExecutorPolicyVersion = f.policyVersions()
		}
		r := Execute(rctx, f.cfg.Runner, f.scoring, task, t)
		f.restart.end(id)
		if !errors.Is(context.Cause(rctx), errRestartAtUpdate) || ctx.Err() != nil {
			return r
		}
		if plan.restarts != nil {
			plan.restarts.Add(1)
		}
		f.log.Info("rollout restarted at a weight update", "rollout", task.ID(), "restarts", restarts+1)
	}
}

// firstLine returns the first line of s (a panic's stack trace stays in the
// result, out of the log line).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
