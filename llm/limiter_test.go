package llm

import (
	"context"
	"testing"
	"time"
)

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLimiterResize(t *testing.T) {
	ctx := context.Background()
	l := NewLimiter(2)
	for range 2 {
		if err := l.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	granted := make(chan int, 3)
	for i := range 3 {
		go func() {
			if l.Acquire(ctx, 1) == nil {
				granted <- i
			}
		}()
		waitFor(t, "a waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.waiters.Len() == i+1 })
	}
	if !l.TakeSaturated() {
		t.Fatal("saturated = false with waiters, want true")
	}
	l.SetLimit(4)
	if a, b := <-granted, <-granted; a+b != 1 {
		t.Fatalf("granted waiters %d and %d, want 0 and 1 (FIFO)", a, b)
	}
	if got, want := l.InUse(), int64(4); got != want {
		t.Fatalf("in use %d, want %d", got, want)
	}
	// Lowering the limit interrupts nobody; releases drain below it first.
	l.SetLimit(1)
	l.Release(1)
	l.Release(1)
	l.Release(1)
	select {
	case <-granted:
		t.Fatal("a waiter was granted while 1 slot of a limit of 1 was held")
	default:
	}
	l.Release(1)
	<-granted
	if got, want := l.Limit(), int64(1); got != want {
		t.Fatalf("limit %d, want %d", got, want)
	}
}

func TestLimiterCancelledWaiterLeaves(t *testing.T) {
	l := NewLimiter(1)
	if err := l.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Acquire(ctx, 1) }()
	waitFor(t, "a waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.waiters.Len() == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled Acquire returned nil")
	}
	l.Release(1)
	if got := l.InUse(); got != 0 {
		t.Fatalf("in use %d after the cancelled waiter left, want 0", got)
	}
	if l.TakeSaturated(); l.TakeSaturated() {
		t.Fatal("saturated twice without waiting, want cleared")
	}
}
