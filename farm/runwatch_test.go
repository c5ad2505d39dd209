package farm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// lossyStore answers Run with a record until lost is set, then as a store
// that lost it (gone, or created anew).
type lossyStore struct {
	store.Store
	created  time.Time
	lost     atomic.Int32 // 0: holds the run, 1: record gone, 2: recreated, 3: queue gone
	failures atomic.Int32 // transient failures to answer first
}

func (s *lossyStore) Run(ctx context.Context, id string) (store.RunRecord, error) {
	if s.failures.Load() > 0 {
		s.failures.Add(-1)
		return store.RunRecord{}, errors.New("dial tcp: connection refused")
	}
	switch s.lost.Load() {
	case 1:
		return store.RunRecord{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	case 2:
		return store.RunRecord{ID: id, Created: s.created.Add(time.Second)}, nil
	}
	return store.RunRecord{ID: id, Created: s.created}, nil
}

func (s *lossyStore) Counts(ctx context.Context, run string) (store.QueueCounts, error) {
	if s.lost.Load() == 3 {
		return store.QueueCounts{}, fmt.Errorf("queue counts of run %s: %w", run, store.ErrQueueLost)
	}
	return store.QueueCounts{}, nil
}

// TestWatchRunStopsOnALostRun: a run whose record vanishes, or is created
// anew, cancels the watched context within a period and ends with
// ErrRunLost naming what was lost and what to do (its queue gone under a
// kept record included); a store that is only
// unreachable for a while is no loss.
func TestWatchRunStopsOnALostRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		lost int32
		want string
	}{
		{"record gone", 1, "record is gone"},
		{"created anew", 2, "created anew"},
		{"queue gone", 3, "work queue is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &lossyStore{created: time.Now()}
			a := &storeAccess{store: st, log: slog.New(slog.DiscardHandler)}
			ctx, end, err := a.watchRun(context.Background(), "r", 10*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			st.failures.Store(3)
			time.Sleep(80 * time.Millisecond)
			if ctx.Err() != nil {
				t.Fatal("an unreachable store counted as a lost run")
			}
			st.lost.Store(tc.lost)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the lost run was not seen")
			}
			err = end(context.Cause(ctx))
			if !errors.Is(err, ErrRunLost) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--resume") {
				t.Errorf("end: %v; want ErrRunLost saying %q and what to do", err, tc.want)
			}
		})
	}
	st := &lossyStore{created: time.Now()}
	a := &storeAccess{store: st, log: slog.New(slog.DiscardHandler)}
	_, end, err := a.watchRun(context.Background(), "r", 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if want := errors.New("other"); end(want) != want {
		t.Error("end without a loss does not return the process's own error")
	}
}
