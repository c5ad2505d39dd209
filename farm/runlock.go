package farm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// ErrRunLockLost: this coordinator's lock on its run was taken over by
// another one (this process failed to renew it for a whole lease: it was
// stopped, or cut off from the store), so two coordinators may have run
// the run at once; this one stops.
var ErrRunLockLost = errors.New("the run's lock was taken over by another coordinator")

// RunLock is a coordinator's hold on its run's lock in the store (see
// store.Locks): taken before the run is touched, renewed every third of
// its lease, released by Release. Workers never take it.
type RunLock struct {
	st     *storeAccess
	run    string
	lease  time.Duration
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	owner store.Owner
}

// LockRun takes run's lock in st for this process for lease (0:
// DefaultLease), retrying while the store is unreachable. The lock of a
// coordinator that ran on this host under a process id that no longer
// exists is taken over at once; that of another host only after its
// lease. A lock another live coordinator holds returns an error wrapping
// a *store.LockedError (and so store.ErrLocked) that names it. LockRun
// returns a context derived from ctx that is canceled if another
// coordinator takes the lock over (the cause wraps ErrRunLockLost) or
// the store cannot take a renewal (the cause wraps store.ErrUnusable);
// the caller runs the run under it and calls Release when the run ends.
func LockRun(ctx context.Context, st store.Store, run string, lease time.Duration, log *slog.Logger) (context.Context, *RunLock, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	var tok [8]byte
	rand.Read(tok[:])
	l := &RunLock{st: &storeAccess{store: st, log: log}, run: run, lease: lease, done: make(chan struct{}),
		owner: store.Owner{Host: host, PID: os.Getpid(), Started: time.Now().UTC()}}
	l.owner.Token = fmt.Sprintf("%s-%d-%s", host, l.owner.PID, hex.EncodeToString(tok[:]))
	err := l.st.retry(ctx, "lock the run", func(ctx context.Context) error {
		o, err := st.LockRun(ctx, run, l.owner, lease)
		var le *store.LockedError
		if errors.As(err, &le) && le.Owner.Host == host && le.Owner.PID != l.owner.PID && !processAlive(le.Owner.PID) {
			// The holder ran on this machine and is gone (killed): its
			// lock is stale now, not only after its lease.
			log.Info("taking over the run's lock from a coordinator that is gone", "run", run, "host", host, "pid", le.Owner.PID)
			if err := st.UnlockRun(ctx, run, le.Owner); err != nil {
				return err
			}
			o, err = st.LockRun(ctx, run, l.owner, lease)
		}
		if err == nil {
			l.owner = o
		}
		return err
	})
	if err != nil {
		var le *store.LockedError
		if errors.As(err, &le) {
			return ctx, nil, fmt.Errorf("%w: stop that process first, or, if it was killed, run again once its lock is stale", le)
		}
		return ctx, nil, err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	l.cancel = cancel
	go l.renew(lctx)
	return lctx, l, nil
}

// renew renews the lock every watchPeriod of its lease until ctx ends or
// another coordinator has taken it. A store that does not answer is not a
// loss: the next renewal tries again, and another coordinator can take the
// lock only once a whole lease passed without one.
func (l *RunLock) renew(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(watchPeriod(l.lease))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		o := l.owner
		l.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, watchPeriod(l.lease))
		n, err := l.st.store.LockRun(rctx, l.run, o, l.lease)
		cancel()
		var le *store.LockedError
		switch {
		case err == nil:
			l.mu.Lock()
			l.owner = n
			l.mu.Unlock()
		case errors.As(err, &le):
			lost := fmt.Errorf("%w: run %q: %w; this process could not renew its lock for a lease (%s) and stops: make sure one coordinator runs the run, then continue it with --resume", ErrRunLockLost, l.run, le, l.lease)
			l.st.log.Error("the run's lock was taken over: stopping", "run", l.run, "error", lost)
			l.cancel(lost)
			return
		case errors.Is(err, store.ErrUnusable):
			// A store that cannot take a write (out of memory, read-only, a
			// full disk) stops the run, which would otherwise wait for
			// workers that stop for the same reason.
			l.st.log.Error("the store cannot serve the run: stopping", "op", "renew the run's lock", "error", err)
			l.cancel(fmt.Errorf("store: renew the run's lock: %w (what is stored is kept: repair the store — free disk space, make it writable, give Redis memory or permissions — and continue the run with --resume)", err))
			return
		case ctx.Err() == nil:
			l.st.log.Warn("renewing the run's lock failed; retrying at the next renewal", "run", l.run, "error", err)
		}
	}
}

// Owner returns the lock's owner record as last taken or renewed.
func (l *RunLock) Owner() store.Owner {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner
}

// Release stops the renewals and releases the lock, so the next
// coordinator of the run need not wait for the lease. It is idempotent;
// an error (the store unreachable) only means the lock goes stale after
// its lease.
func (l *RunLock) Release() error {
	var err error
	l.once.Do(func() {
		l.cancel(nil)
		<-l.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err = l.st.store.UnlockRun(ctx, l.run, l.Owner()); err != nil {
			l.st.log.Warn("releasing the run's lock failed: it goes stale after its lease", "run", l.run, "lease", l.lease, "error", err)
		}
	})
	return err
}
