package farm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWithGrace checks the grace context outlives its parent's
// cancellation by the grace period, ends with the parent's cause, and
// ends at once when stopped.
func TestWithGrace(t *testing.T) {
	cause := errors.New("SIGINT")
	parent, cancel := context.WithCancelCause(context.Background())
	ctx, stop := withGrace(parent, 200*time.Millisecond)
	defer stop()
	cancel(cause)
	select {
	case <-ctx.Done():
		t.Fatal("the grace context ended with its parent")
	case <-time.After(50 * time.Millisecond):
	}
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), cause) {
			t.Errorf("cause %v, want the parent's", context.Cause(ctx))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the grace context outlived its grace period")
	}

	ctx2, stop2 := withGrace(context.Background(), time.Hour)
	stop2()
	if ctx2.Err() == nil {
		t.Error("stop did not end the grace context")
	}
}
