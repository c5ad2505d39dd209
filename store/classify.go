package store

import (
	"context"
	"errors"
)

// The two classes of a backend's own failures. Backends wrap their
// driver's errors with one of them where the driver says which it is
// (SQLite's result codes, Redis's error replies); Transient decides for
// every caller alike.
var (
	// ErrUnavailable: the backend cannot answer for now (busy, loading its
	// data, a lock held by another process) and may by itself later:
	// callers retry with backoff.
	ErrUnavailable = errors.New("store unavailable for now")
	// ErrUnusable: the backend answered with a failure that retrying does
	// not cure — a full disk, a read-only, corrupt or unopenable
	// database, a Redis out of memory, read-only or refusing the user's
	// permissions. Callers stop; what was stored stays, so the run can
	// continue once the store is repaired.
	ErrUnusable = errors.New("store unusable")
)

// Transient reports whether err may go away by itself, so that the call
// is worth retrying: ErrUnavailable and failures the backend did not
// classify (a refused connection, a timeout, a reset). An answer of the
// store (ErrNotFound, ErrConflict, ErrLeaseLost, ErrLocked), a lost queue
// (ErrQueueLost), damaged data
// (ErrCorrupt), ErrUnusable, a closed store and a canceled context are
// not transient.
func Transient(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrUnavailable):
		return true
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict), errors.Is(err, ErrCorrupt),
		errors.Is(err, ErrLeaseLost), errors.Is(err, ErrLocked), errors.Is(err, ErrQueueLost), errors.Is(err, ErrClosed), errors.Is(err, ErrUnusable),
		errors.Is(err, context.Canceled):
		return false
	}
	return true
}
