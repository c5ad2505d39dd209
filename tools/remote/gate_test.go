package remote

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

func TestGateHonoursRetryAfter(t *testing.T) {
	g := NewGate(GateConfig{Retries429: 2})
	var calls []time.Time
	err := g.Do(context.Background(), func(context.Context) error {
		calls = append(calls, time.Now())
		if len(calls) == 1 {
			return &httpretry.StatusError{Code: http.StatusTooManyRequests, RetryAfter: 300 * time.Millisecond}
		}
		return nil
	})
	if err != nil || len(calls) != 2 {
		t.Fatalf("err = %v after %d calls", err, len(calls))
	}
	if gap := calls[1].Sub(calls[0]); gap < 300*time.Millisecond {
		t.Errorf("retried after %v, want ≥ Retry-After 300ms", gap)
	}
}

func TestGatePausesEveryCallerAfter429(t *testing.T) {
	g := NewGate(GateConfig{Retries429: 1})
	var first atomic.Bool
	var mu sync.Mutex
	var after []time.Time
	limitedAt := make(chan time.Time, 1)
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = g.Do(context.Background(), func(context.Context) error {
			if first.CompareAndSwap(false, true) {
				limitedAt <- time.Now()
				return &httpretry.StatusError{Code: 429, RetryAfter: 200 * time.Millisecond}
			}
			return nil
		})
		close(release)
	}()
	t0 := <-limitedAt
	// Wait (by channel, not by sleeping) until the pause is recorded.
	deadline := time.Now().Add(time.Second)
	for {
		g.mu.Lock()
		paused := g.until.After(t0)
		g.mu.Unlock()
		if paused || time.Now().After(deadline) {
			break
		}
		<-time.After(time.Millisecond)
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = g.Do(context.Background(), func(context.Context) error {
				mu.Lock()
				after = append(after, time.Now())
				mu.Unlock()
				return nil
			})
		}()
	}
	wg.Wait()
	<-release
	for _, a := range after {
		if a.Sub(t0) < 200*time.Millisecond {
			t.Errorf("a caller ran %v after the 429, inside the 200ms pause", a.Sub(t0))
		}
	}
}

func TestGateGivesUpAfterRetries(t *testing.T) {
	g := NewGate(GateConfig{Retries429: 2, Backoff429: time.Millisecond})
	n := 0
	err := g.Do(context.Background(), func(context.Context) error { n++; return &httpretry.StatusError{Code: 429} })
	var se *httpretry.StatusError
	if !errors.As(err, &se) || n != 3 {
		t.Fatalf("err = %v after %d calls, want 429 after 3", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g2 := NewGate(GateConfig{Rate: 1})
	_ = g2.Do(context.Background(), func(context.Context) error { return nil })
	if err := g2.Do(ctx, func(context.Context) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
}
