package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// TestConformanceWriteBehind runs the conformance suite on the store as
// mgrpo uses it: behind a write-behind buffer (a short delay, so the
// suite's waits see writes applied by the timer too).
func TestConformanceWriteBehind(t *testing.T) {
	bound := store.WriteBehindBound{Writes: 8, Bytes: 1 << 20, Delay: 20 * time.Millisecond}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return store.NewWriteBehind(MustOpen(t, tempPath(t)), bound) },
		Reopen: func(t *testing.T, s store.Store) store.Store {
			path := s.(*store.WriteBehind).Unwrap().(*sqlite.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return store.NewWriteBehind(MustOpen(t, path), bound)
		},
	})
}

// TestWriteBehindCrashLosesAtMostTheBound writes through a write-behind
// store and reads the file through a second store, which sees what a
// crash of the first process would leave: every write but those held,
// never more than the bound, and every write made before a call that is
// not held (PutStep here) once that call returns.
func TestWriteBehindCrashLosesAtMostTheBound(t *testing.T) {
	ctx := storetest.Context(t)
	path := tempPath(t)
	inner := MustOpen(t, path)
	w := store.NewWriteBehind(inner, store.WriteBehindBound{Writes: 4, Bytes: 1 << 20, Delay: time.Hour})
	other := MustOpen(t, path)
	if err := w.CreateRun(ctx, store.RunRecord{ID: "r", Version: store.RunRecordVersion, Config: []byte(`{}`), Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := w.PutResult(ctx, "r", 1, fmt.Sprintf("r/1/q0/%d", i), []byte(`{"i":1}`)); err != nil {
			t.Fatal(err)
		}
		held := w.Stats().Pending
		n, err := other.CountResults(ctx, "r", 1)
		if err != nil {
			t.Fatal(err)
		}
		if held > 4 || n+held != i+1 {
			t.Fatalf("after %d results: %d in the file, %d held; want at most 4 held and none lost", i+1, n, held)
		}
	}
	if err := w.Set(ctx, "k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := w.Get(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Errorf("Get of a held entry = %q, %v, %v", v, ok, err)
	}
	if err := w.PutStep(ctx, "r", store.StepRecord{Step: 1, Status: store.StepScheduled, Rollouts: 10}); err != nil {
		t.Fatal(err)
	}
	if n, _ := other.CountResults(ctx, "r", 1); n != 10 {
		t.Errorf("after PutStep the file holds %d results, want all 10 (writes reach it in order)", n)
	}
	if v, ok, _ := other.Get(ctx, "k"); !ok || string(v) != "v" {
		t.Errorf("after PutStep the file's cache entry = %q, %v", v, ok)
	}
	if st := w.Stats(); st.Pending != 0 || st.Writes != 11 || st.Batches >= 11 {
		t.Errorf("stats %+v: want 11 writes in fewer batches, none held", st)
	}
}

// TestWriteBehindDelay: a write is applied within the bound's delay
// without any other call.
func TestWriteBehindDelay(t *testing.T) {
	ctx := storetest.Context(t)
	path := tempPath(t)
	w := store.NewWriteBehind(MustOpen(t, path), store.WriteBehindBound{Writes: 1000, Bytes: 1 << 20, Delay: 20 * time.Millisecond})
	other := MustOpen(t, path)
	for i := range 3 {
		if err := w.PutResult(ctx, "r", 1, fmt.Sprintf("t%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := other.CountResults(ctx, "r", 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 results applied after 10 s (delay 20 ms)", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := w.Stats(); st.Pending != 0 {
		t.Errorf("stats %+v: want none held", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.PutResult(ctx, "r", 1, "late", []byte(`{}`)); err == nil {
		t.Error("PutResult after Close: no error")
	}
}
