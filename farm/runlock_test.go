package farm

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// cutStore fails LockRun as an unreachable store while cut is set.
type cutStore struct {
	store.Store
	cut atomic.Bool
}

func (s *cutStore) LockRun(ctx context.Context, run string, o store.Owner, lease time.Duration) (store.Owner, error) {
	if s.cut.Load() {
		return o, errors.New("dial tcp: connection refused")
	}
	return s.Store.LockRun(ctx, run, o, lease)
}

// TestRunLock: a second coordinator is refused naming the first's host
// and pid, takes the lock once the first releases it, and a coordinator
// cut off from the store for a lease, whose lock another took over, has
// its context canceled with ErrRunLockLost once it reaches the store.
func TestRunLock(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	_, first, err := LockRun(ctx, st, "r", time.Minute, log)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = LockRun(ctx, st, "r", time.Minute, log)
	host, _ := os.Hostname()
	var le *store.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), host) {
		t.Fatalf("second coordinator: %v; want a *store.LockedError naming host %s and pid %d", err, host, os.Getpid())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Errorf("Release again: %v", err)
	}
	_, second, err := LockRun(ctx, st, "r", time.Minute, log)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	second.Release()

	cs := &cutStore{Store: st}
	lctx, cut, err := LockRun(ctx, cs, "q", 300*time.Millisecond, log)
	if err != nil {
		t.Fatal(err)
	}
	defer cut.Release()
	cs.cut.Store(true)
	var other *RunLock
	deadline := time.Now().Add(10 * time.Second)
	for other == nil {
		if time.Now().After(deadline) {
			t.Fatal("the stale lock was not taken over")
		}
		if _, l, err := LockRun(ctx, st, "q", time.Minute, log); err == nil {
			other = l
		} else if !errors.Is(err, store.ErrLocked) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer other.Release()
	if lctx.Err() != nil {
		t.Fatal("cut off from the store: canceled before reaching it again")
	}
	cs.cut.Store(false)
	select {
	case <-lctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the taken-over lock was not noticed")
	}
	if cause := context.Cause(lctx); !errors.Is(cause, ErrRunLockLost) || !strings.Contains(cause.Error(), "--resume") {
		t.Errorf("cause %v; want ErrRunLockLost saying what to do", cause)
	}
}
