package farm

import (
	"context"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// queuePoll is how often a coordinator looks at its step's progress.
const queuePoll = 200 * time.Millisecond

// runQueued enqueues the step's unfinished rollouts in the store's queue,
// runs Concurrency of them at a time in this process (0: none) while
// `mgrpo worker` processes take the rest, and waits until every rollout of
// the step has a result. A dead-lettered rollout gets a failed result, so
// its group stays whole. It returns the digests in plan order.
func (f *Farm) runQueued(ctx context.Context, plan stepPlan, finished map[int]resultDigest) ([]resultDigest, error) {
	n := len(plan.units)
	todo := make([]int, 0, n)
	for i := range plan.units {
		if _, ok := finished[i]; !ok {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		tasks := make([]rollout.RolloutTask, 0, len(todo))
		for _, i := range todo {
			tasks = append(tasks, plan.units[i])
		}
		if err := f.st.retry(ctx, fmt.Sprintf("enqueue the rollouts of step %d", plan.step), func(ctx context.Context) error {
			return f.cfg.Store.Enqueue(ctx, f.cfg.Run, tasks)
		}); err != nil {
			return nil, err
		}
	}
	f.log.Info("step queued", "step", plan.step, "rollouts", len(todo), "local_concurrency", f.cfg.Concurrency)

	workCtx, stopWork := context.WithCancel(ctx)
	workDone := make(chan error, 1)
	if f.cfg.Concurrency > 0 && len(todo) > 0 {
		w, err := NewWorker(f.cfg, f.tasks, f.cfg.Worker)
		if err != nil {
			stopWork()
			return nil, err
		}
		go func() { workDone <- w.Serve(workCtx) }()
	} else {
		workDone <- nil
	}
	// watch is workDone until the local worker has stopped.
	watch := (<-chan error)(workDone)
	var workErr error
	stop := func() error {
		stopWork()
		if watch != nil {
			workErr = <-workDone
		}
		return workErr
	}

	byID := make(map[string]int, n)
	for i, u := range plan.units {
		byID[u.ID()] = i
	}
	p := Progress{Step: plan.step, Total: n}
	start := time.Now()
	tick := time.NewTicker(queuePoll)
	defer tick.Stop()
	deadSeen := 0
	for {
		count, err := f.countResults(ctx, plan.step)
		if err != nil {
			stop()
			return nil, err
		}
		if done := min(count, n); done != p.Done {
			p.Done = done
			if s := time.Since(start).Seconds(); s > 0 {
				p.Rate = float64(p.Done) / s
			}
			if f.cfg.OnProgress != nil {
				f.progress(p)
			}
		}
		if count >= n {
			// The count takes in pending retries (results kept under
			// keys of their own): the step is in once every rollout
			// has its own result.
			have, err := f.st.digests(ctx, f.cfg.Run, plan.step)
			if err != nil {
				stop()
				return nil, err
			}
			if allFinal(plan, have) {
				break
			}
		}
		if deadSeen, err = f.recordDead(ctx, plan, byID, deadSeen); err != nil {
			stop()
			return nil, err
		}
		select {
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("rollout step %d interrupted with %d of %d rollouts done (the rest stay queued for --resume): %w", plan.step, p.Done, n, context.Cause(ctx))
		case workErr = <-watch:
			watch = nil
			if workErr != nil {
				stopWork()
				return nil, fmt.Errorf("rollout step %d: local worker: %w", plan.step, workErr)
			}
		case <-tick.C:
		}
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("rollout step %d: local worker: %w", plan.step, err)
	}
	have, err := f.st.digests(ctx, f.cfg.Run, plan.step)
	if err != nil {
		return nil, err
	}
	digests := make([]resultDigest, n)
	for i, u := range plan.units {
		d, ok := have[u.ID()]
		if !ok {
			return nil, fmt.Errorf("rollout step %d: no result for %s although the step counts %d", plan.step, u.ID(), len(have))
		}
		digests[i] = d
	}
	return digests, nil
}

// allFinal reports whether every rollout of plan has its own result in
// have (not only a pending retry).
func allFinal(plan stepPlan, have map[string]resultDigest) bool {
	for _, u := range plan.units {
		if d, ok := have[u.ID()]; !ok || d.pending {
			return false
		}
	}
	return true
}

// countResults returns how many results the step holds.
func (f *Farm) countResults(ctx context.Context, step int) (int, error) {
	var n int
	err := f.st.retry(ctx, fmt.Sprintf("count the results of step %d", step), func(ctx context.Context) error {
		var err error
		n, err = f.cfg.Store.CountResults(ctx, f.cfg.Run, step)
		return err
	})
	return n, err
}

// recordDead gives each rollout of the step that was dead-lettered since
// the last call a failed result naming why, and returns how many dead
// letters it has seen.
func (f *Farm) recordDead(ctx context.Context, plan stepPlan, byID map[string]int, seen int) (int, error) {
	var counts store.QueueCounts
	if err := f.st.retry(ctx, "count the queue", func(ctx context.Context) error {
		var err error
		counts, err = f.cfg.Store.Counts(ctx, f.cfg.Run)
		return err
	}); err != nil {
		return seen, err
	}
	if counts.Dead <= seen {
		return seen, nil
	}
	var dead []store.DeadTask
	if err := f.st.retry(ctx, "read the dead letters", func(ctx context.Context) error {
		var err error
		dead, err = f.cfg.Store.DeadLetters(ctx, f.cfg.Run)
		return err
	}); err != nil {
		return seen, err
	}
	for _, d := range dead[min(seen, len(dead)):] {
		i, ok := byID[d.Task.ID()]
		if !ok || d.Task.Step != plan.step {
			continue
		}
		why := fmt.Sprintf("rollout dead-lettered: its lease expired %d times (last worker %s); a worker running it may have crashed", d.Attempts, d.LastWorker)
		f.log.Warn("rollout dead-lettered: recorded as failed", "rollout", d.Task.ID(), "attempts", d.Attempts, "last_worker", d.LastWorker)
		r := failedResult(ctx, f.scoring, d.Task, plan.tasks[i/f.cfg.GroupSize], why)
		r.final = true
		if _, err := f.st.putResult(ctx, &r); err != nil {
			return seen, err
		}
	}
	return len(dead), nil
}
