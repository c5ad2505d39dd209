// Package pool is the project's one bounded work pool: a number of slots
// shared by groups of tasks, each group with a grace period after its
// caller's cancellation and an abandon with a cause once the grace period
// is over. The rollout farm (its in-process steps, its streamed draws and
// its workers) and the eval runner run their work through it.
//
// A task runs under its group's work context, which the caller's
// cancellation does not reach directly: when the caller's context ends (or
// Stop is called) no further task starts and those in flight get the grace
// period; when it ends, the work context is cancelled with the cause the
// group's abandon function makes of the caller's. Tasks hold no slot once
// they return, so an abandoned task winds down on its own.
package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Pool bounds how many tasks run at once across all its groups. It is
// safe for concurrent use.
type Pool struct {
	sem  *semaphore.Weighted
	size int
}

// New returns a pool of size slots (at least 1).
func New(size int) *Pool {
	size = max(size, 1)
	return &Pool{sem: semaphore.NewWeighted(int64(size)), size: size}
}

// Size returns the pool's number of slots.
func (p *Pool) Size() int { return p.size }

// ErrStopped is returned by Acquire and Go once the group takes no more
// tasks (its caller's context ended, Stop was called, or it was
// abandoned); it wraps the cause.
var ErrStopped = errors.New("pool group stopped")

// Group is a set of tasks run on a pool's slots under one work context.
// Its methods are safe for concurrent use; Close ends it.
type Group struct {
	pool  *Pool
	grace time.Duration
	// abandon makes the cause the work context is cancelled with when the
	// grace period ends, from the cause of the stop.
	abandon func(cause error) error

	work       context.Context
	cancelWork context.CancelCauseFunc
	// starts ends when the group takes no more tasks.
	starts     context.Context
	stopStarts context.CancelCauseFunc

	wg      sync.WaitGroup
	running atomic.Int64

	stopOnce sync.Once
	stopped  chan struct{} // closed by Stop
	cause    error         // Stop's cause, set before stopped is closed
	watched  chan struct{} // closed when the grace watcher returns
}

// NewGroup returns a group of tasks on p's slots. When ctx ends, or Stop
// is called, the group starts no more tasks and the grace period begins;
// when it ends, the work context is cancelled with abandon(cause), cause
// being ctx's cause or Stop's (abandon nil: the cause as it is). The work
// context keeps ctx's values.
func (p *Pool) NewGroup(ctx context.Context, grace time.Duration, abandon func(cause error) error) *Group {
	if abandon == nil {
		abandon = func(cause error) error { return cause }
	}
	g := &Group{pool: p, grace: grace, abandon: abandon, stopped: make(chan struct{}), watched: make(chan struct{})}
	g.work, g.cancelWork = context.WithCancelCause(context.WithoutCancel(ctx))
	g.starts, g.stopStarts = context.WithCancelCause(ctx)
	go g.watch(ctx)
	return g
}

// watch runs the grace period once the group stops.
func (g *Group) watch(ctx context.Context) {
	defer close(g.watched)
	var cause error
	select {
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-g.stopped:
		cause = g.cause
	case <-g.work.Done():
		return
	}
	g.stopStarts(cause)
	t := time.NewTimer(g.grace)
	defer t.Stop()
	select {
	case <-t.C:
		g.cancelWork(g.abandon(cause))
	case <-g.work.Done():
	}
}

// Acquire waits for a free slot and holds it for a task given to Start;
// it returns an error wrapping ErrStopped, without a slot, once the group
// takes no more tasks (a stop that races with a free slot included).
func (g *Group) Acquire() error {
	if err := g.pool.sem.Acquire(g.starts, 1); err != nil {
		return g.stopErr()
	}
	if g.starts.Err() != nil {
		g.pool.sem.Release(1)
		return g.stopErr()
	}
	return nil
}

// TryAcquire holds a free slot if there is one, without waiting.
func (g *Group) TryAcquire() bool {
	if g.starts.Err() != nil {
		return false
	}
	return g.pool.sem.TryAcquire(1)
}

// Release gives back a slot held with Acquire or TryAcquire and not given
// to Start.
func (g *Group) Release() { g.pool.sem.Release(1) }

// Start runs fn in its own goroutine on a slot already held, with the
// group's work context; the slot is released when fn returns.
func (g *Group) Start(fn func(ctx context.Context)) {
	g.wg.Add(1)
	g.running.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.pool.sem.Release(1)
		defer g.running.Add(-1)
		fn(g.work)
	}()
}

// Go waits for a free slot and runs fn on it (Acquire, then Start); it
// returns an error wrapping ErrStopped, without running fn, once the
// group takes no more tasks.
func (g *Group) Go(fn func(ctx context.Context)) error {
	if err := g.Acquire(); err != nil {
		return err
	}
	g.Start(fn)
	return nil
}

// stopErr is the error of a start refused because the group stopped.
func (g *Group) stopErr() error {
	if cause := context.Cause(g.starts); cause != nil {
		return errors.Join(ErrStopped, cause)
	}
	return ErrStopped
}

// Stop starts no more tasks and begins the grace period now (with cause
// for abandon), unless it has begun already. It is idempotent.
func (g *Group) Stop(cause error) {
	g.stopOnce.Do(func() {
		g.cause = cause
		close(g.stopped)
	})
}

// Abandon cancels the work context at once with cause (and starts no more
// tasks). It is idempotent: the first cause stays.
func (g *Group) Abandon(cause error) {
	g.cancelWork(cause)
	g.stopStarts(cause)
}

// Abandoned is closed once the work context is cancelled: the grace
// period ended, or Abandon or Close was called.
func (g *Group) Abandoned() <-chan struct{} { return g.work.Done() }

// Running returns how many tasks are running.
func (g *Group) Running() int { return int(g.running.Load()) }

// Drain waits until every task started has returned, or the group is
// abandoned; it reports whether they all returned. It does not stop the
// group (see Stop).
func (g *Group) Drain() bool {
	idle := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return true
	case <-g.work.Done():
		select {
		case <-idle:
			return true
		default:
			return false
		}
	}
}

// Wait waits until every task started has returned.
func (g *Group) Wait() { g.wg.Wait() }

// Close cancels the work context (with context.Canceled, unless it was
// abandoned before) and ends the grace watcher; it does not wait for the
// tasks. It is idempotent.
func (g *Group) Close() {
	g.Abandon(context.Canceled)
	<-g.watched
}
