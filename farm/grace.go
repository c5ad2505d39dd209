package farm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// withGrace returns a context that outlives ctx's cancellation by grace:
// it ends grace after ctx does (with ctx's cause), or when the returned
// stop is called. The trainer call in flight when the run is interrupted
// gets it, so that a step already paid for in rollouts is trained, synced
// and recorded rather than thrown away, as in-flight rollouts get their
// grace period.
func withGrace(ctx context.Context, grace time.Duration) (context.Context, func()) {
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stopped := false
	stopAfter := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		timer = time.AfterFunc(grace, func() {
			cancel(fmt.Errorf("the grace period (%v) ended: %w", grace, context.Cause(ctx)))
		})
	})
	return gctx, func() {
		stopAfter()
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}
