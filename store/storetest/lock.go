package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// testLocks: one owner at a time per run; the holder renews; another is
// refused with the holder named until the lease passes, then takes over;
// unlocking is the holder's alone and idempotent; runs lock separately.
func testLocks(t *testing.T, b Backend) {
	s := open(t, b)
	c := ctx(t)
	started := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	a := store.Owner{Token: "a-token", Host: "box-a", PID: 101, Started: started}
	o := store.Owner{Token: "b-token", Host: "box-b", PID: 202, Started: started.Add(time.Minute)}
	const long = time.Minute

	got, err := s.LockRun(c, "r1", a, long)
	if err != nil {
		t.Fatalf("LockRun of a free run: %v", err)
	}
	if got.Token != a.Token || time.Until(got.Expires) <= 0 || time.Until(got.Expires) > long {
		t.Errorf("LockRun: %+v, want a's owner expiring within %v", got, long)
	}
	if _, err := s.LockRun(c, "r1", a, long); err != nil {
		t.Errorf("LockRun by the holder (a renewal): %v", err)
	}
	_, err = s.LockRun(c, "r1", o, long)
	var le *store.LockedError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLocked) {
		t.Fatalf("LockRun of a held run: err %v, want a *LockedError wrapping ErrLocked", err)
	}
	if h := le.Owner; h.Host != "box-a" || h.PID != 101 || !h.Started.Equal(started) || time.Until(h.Expires) <= 0 || time.Until(h.Expires) > long {
		t.Errorf("LockedError's owner %+v: want box-a, pid 101, started %v, expiring within %v", h, started, long)
	}
	if le.Owner.Token != a.Token {
		t.Errorf("LockedError's owner token %q, want %q (a caller that knows the holder dead releases its lock with it)", le.Owner.Token, a.Token)
	}
	if le.Run != "r1" {
		t.Errorf("LockedError's run %q, want r1", le.Run)
	}
	if _, err := s.LockRun(c, "r2", o, long); err != nil {
		t.Errorf("LockRun of another run: %v (runs lock separately)", err)
	}
	// Only the holder unlocks.
	if err := s.UnlockRun(c, "r1", o); err != nil {
		t.Errorf("UnlockRun by a non-holder: %v, want nil", err)
	}
	if _, err := s.LockRun(c, "r1", o, long); !errors.Is(err, store.ErrLocked) {
		t.Errorf("after a non-holder's UnlockRun: err %v, want still ErrLocked", err)
	}
	if err := s.UnlockRun(c, "r1", a); err != nil {
		t.Fatalf("UnlockRun by the holder: %v", err)
	}
	if err := s.UnlockRun(c, "r1", a); err != nil {
		t.Errorf("UnlockRun again: %v, want nil (idempotent)", err)
	}
	if _, err := s.LockRun(c, "r1", o, long); err != nil {
		t.Fatalf("LockRun after the holder released: %v", err)
	}
	// A lock left to go stale (its holder killed) is taken over once its
	// lease has passed, and the old holder's renewal is then refused.
	if _, err := s.LockRun(c, "r3", a, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockRun(c, "r3", o, long); !errors.Is(err, store.ErrLocked) {
		t.Errorf("LockRun under a live short lease: err %v, want ErrLocked", err)
	}
	eventually(t, "a stale lock taken over", func() bool {
		_, err := s.LockRun(c, "r3", o, long)
		return err == nil
	})
	if _, err := s.LockRun(c, "r3", a, long); !errors.Is(err, store.ErrLocked) {
		t.Errorf("the old holder's renewal after a takeover: err %v, want ErrLocked", err)
	}
}
