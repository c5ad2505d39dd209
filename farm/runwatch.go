package farm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// ErrRunLost: the store no longer holds the run this process serves — its
// record is gone (a Redis restarted without persistence, or flushed), the
// run was created anew (its record's Created, the run's incarnation
// marker, changed), or its work queue vanished under the record
// (store.ErrQueueLost). The rollouts stored since the last written step went
// with it, so the process stops instead of waiting for them.
var ErrRunLost = errors.New("the store lost the run")

// maxWatchPeriod bounds how often a process looks at its run's record.
const maxWatchPeriod = 2 * time.Second

// watchPeriod is how often a process with leases of lease checks that the
// store still holds its run: at least three times a lease, so a lost run
// is seen within one lease period.
func watchPeriod(lease time.Duration) time.Duration {
	if lease <= 0 {
		lease = DefaultLease
	}
	return min(lease/3, maxWatchPeriod)
}

// watchRun reads run's record and then checks every period that the store
// still holds that incarnation of it (a run not created yet is watched
// from its first record seen). It returns a context canceled once
// the run is lost, and end, which stops the watch and returns err, or the
// loss (wrapping ErrRunLost) when that is what stopped the process. A
// store that cannot be reached for a while is not a loss: the calls that
// need it retry, and the watch looks again once it answers.
func (a *storeAccess) watchRun(ctx context.Context, run string, period time.Duration) (context.Context, func(error) error, error) {
	var created time.Time
	err := a.retry(ctx, "read the run's record", func(ctx context.Context) error {
		rec, err := a.store.Run(ctx, run)
		created = rec.Created
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		// A worker may start before its run: the watch begins with the
		// first record it sees.
		created, err = time.Time{}, nil
	}
	if err != nil {
		return ctx, nil, err
	}
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if created.IsZero() {
				if rec, err := a.store.Run(wctx, run); err == nil {
					created = rec.Created
				}
				continue
			}
			if lost := a.checkRun(wctx, run, created, period); lost != nil {
				a.log.Error("the store lost the run: stopping", "run", run, "error", lost)
				cancel(lost)
				return
			}
		}
	}()
	end := func(err error) error {
		cause := context.Cause(wctx)
		cancel(nil)
		<-done
		if errors.Is(cause, ErrRunLost) {
			return cause
		}
		if err != nil && !created.IsZero() {
			// A failure the watch has not explained yet (a result missing
			// from a step that counted them) may be the loss itself.
			if lost := a.checkRun(context.WithoutCancel(ctx), run, created, period); lost != nil {
				return fmt.Errorf("%w (%w)", lost, err)
			}
		}
		return err
	}
	return wctx, end, nil
}

// checkRun returns an error wrapping ErrRunLost when the store no longer
// holds the incarnation created of run or its queue, nil otherwise (a
// store that does not answer included).
func (a *storeAccess) checkRun(ctx context.Context, run string, created time.Time, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec, err := a.store.Run(cctx, run)
	const todo = "the rollouts stored since its last written step are gone, written steps are kept: start a new run (a new --run or --out), continue it with --resume once the store holds the run again, or with --resume --rebuild-store to rebuild the store's view from the step files (see docs/store.md, Redis persistence)"
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: run %q: its record is gone from the store (a Redis restarted without persistence, or flushed?); %s", ErrRunLost, run, todo)
	case err != nil:
		return nil
	case !rec.Created.Equal(created):
		return fmt.Errorf("%w: run %q was created anew in the store (at %s; this process serves the run created at %s); %s", ErrRunLost, run,
			rec.Created.UTC().Format(time.RFC3339Nano), created.UTC().Format(time.RFC3339Nano), todo)
	}
	if _, err := a.store.Counts(cctx, run); errors.Is(err, store.ErrQueueLost) {
		return fmt.Errorf("%w: run %q: its record is kept but its work queue is gone (%w), so the rollouts queued cannot be handed out; written steps are kept: stop every coordinator and worker of the run, delete the run's keys from the store (with redis-cli, every key matching PREFIX{RUN}:*) and continue with --resume --rebuild-store, or start a new run (a new --run or --out)", ErrRunLost, run, err)
	}
	return nil
}
