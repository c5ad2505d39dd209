package llm

import (
	"container/list"
	"context"
	"sync"
)

// slots is what a pool's role-wide cap needs of a semaphore: a fixed
// semaphore.Weighted, or a Limiter whose limit a controller moves.
type slots interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// Limiter is a FIFO counting semaphore whose limit can change while calls
// hold and wait for slots: the role-wide in-flight cap of a pool under
// --concurrency auto. Lowering the limit never interrupts a call in flight;
// new calls wait until enough have finished. It is safe for concurrent use.
type Limiter struct {
	mu      sync.Mutex
	limit   int64
	inUse   int64
	waiters list.List // of chan struct{}, closed when granted
	// saturated records that a call had to wait since the last TakeSaturated:
	// the limit, not the callers, bounded the work in flight.
	saturated bool
}

var _ slots = (*Limiter)(nil)

// NewLimiter returns a Limiter admitting limit calls at once (at least 1).
func NewLimiter(limit int64) *Limiter {
	return &Limiter{limit: max(limit, 1)}
}

// Acquire waits for n slots (n is 1 for every caller of the pool) or for
// ctx to end, in which case it returns ctx's error and holds nothing.
func (l *Limiter) Acquire(ctx context.Context, n int64) error {
	l.mu.Lock()
	if l.inUse+n <= l.limit && l.waiters.Len() == 0 {
		l.inUse += n
		l.mu.Unlock()
		return nil
	}
	l.saturated = true
	ready := make(chan struct{})
	el := l.waiters.PushBack(waiter{n: n, ready: ready})
	l.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		select {
		case <-ready:
			// Granted while giving up: hand the slots back.
			l.inUse -= n
			l.grantLocked()
		default:
			l.waiters.Remove(el)
			// The head may have left: the next ones may fit now.
			l.grantLocked()
		}
		l.mu.Unlock()
		return ctx.Err()
	}
}

// waiter is one queued Acquire.
type waiter struct {
	n     int64
	ready chan struct{}
}

// Release returns n slots.
func (l *Limiter) Release(n int64) {
	l.mu.Lock()
	l.inUse -= n
	l.grantLocked()
	l.mu.Unlock()
}

// SetLimit moves the limit (at least 1) and admits the waiters that fit
// under a raised one.
func (l *Limiter) SetLimit(limit int64) {
	l.mu.Lock()
	l.limit = max(limit, 1)
	l.grantLocked()
	l.mu.Unlock()
}

// Limit returns the current limit.
func (l *Limiter) Limit() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// InUse returns the slots held now.
func (l *Limiter) InUse() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inUse
}

// TakeSaturated reports whether a call waited for a slot, or waits now,
// since the previous TakeSaturated, and clears the record.
func (l *Limiter) TakeSaturated() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.saturated || l.waiters.Len() > 0
	l.saturated = false
	return s
}

// grantLocked admits waiters in order while they fit; l.mu is held.
func (l *Limiter) grantLocked() {
	for el := l.waiters.Front(); el != nil; el = l.waiters.Front() {
		w := el.Value.(waiter)
		if l.inUse+w.n > l.limit {
			return
		}
		l.inUse += w.n
		l.waiters.Remove(el)
		close(w.ready)
	}
}
