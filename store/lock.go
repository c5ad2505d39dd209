package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLocked: the run's lock is held by another owner whose lease has not
// run out. The error is a *LockedError naming that owner.
var ErrLocked = errors.New("run is locked by another process")

// Owner is the holder of a run's lock: the one coordinator of the run
// (mgrpo rollout or train). Workers never lock a run.
type Owner struct {
	// Token tells owners apart; it is unique to one process's hold (a
	// restarted process on the same host and pid is another owner).
	Token string `json:"token"`
	// Host and PID say where the owner runs, for the message a second
	// coordinator prints.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Started is when the owner first took the lock.
	Started time.Time `json:"started"`
	// Expires is when the lock goes stale unless renewed (set by LockRun,
	// by the caller's clock).
	Expires time.Time `json:"-"`
}

// LockedError is the error of LockRun when another owner holds the lock.
type LockedError struct {
	Run   string
	Owner Owner
}

func (e *LockedError) Error() string {
	stale := time.Until(e.Owner.Expires).Round(time.Second)
	return fmt.Sprintf("run %q is held by another coordinator: host %s, pid %d, since %s; its lock goes stale in %s unless that process renews it",
		e.Run, e.Owner.Host, e.Owner.PID, e.Owner.Started.UTC().Format(time.RFC3339), max(stale, 0))
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Locks hold each run's owner record, a lock with a lease: a coordinator
// takes it before it touches the run, renews it every third of its lease
// while it runs and releases it when it stops, so that two coordinators
// never run one run at once, and the lock of a killed one goes stale by
// itself.
type Locks interface {
	// LockRun takes run's lock for o until lease from now, or renews it
	// when o (by Token) holds it, and returns o with Expires set. A lock
	// held by another owner whose lease has passed is taken over. A lock
	// held by another owner under a live lease returns a *LockedError
	// (wrapping ErrLocked) with that owner (its Token included, so that a
	// caller that knows it dead can UnlockRun it) and its Expires. The run
	// need not exist.
	LockRun(ctx context.Context, run string, o Owner, lease time.Duration) (Owner, error)
	// UnlockRun releases run's lock when o holds it; otherwise (released
	// already, taken over by another) it does nothing. Idempotent.
	UnlockRun(ctx context.Context, run string, o Owner) error
}
