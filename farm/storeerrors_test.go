package farm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/mgrpo/mgrpo/store"
)

// TestRetryStopsOnUnusableStore: a store failing with ErrUnusable (a full
// disk, say) stops the call at its first attempt with a message saying
// how to continue, while a transient failure is retried until it passes.
func TestRetryStopsOnUnusableStore(t *testing.T) {
	a := &storeAccess{log: slog.New(slog.DiscardHandler)}
	calls := 0
	err := a.retry(context.Background(), "store a result", func(context.Context) error {
		calls++
		return fmt.Errorf("sqlite x: put: %w: database or disk is full (13)", store.ErrUnusable)
	})
	if calls != 1 || !errors.Is(err, store.ErrUnusable) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("unusable store: %d calls, %v; want 1 call and an error pointing at --resume", calls, err)
	}
	calls = 0
	err = a.retry(context.Background(), "store a result", func(context.Context) error {
		if calls++; calls < 3 {
			return fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("transient failures: %d calls, %v; want success at the third", calls, err)
	}
}
