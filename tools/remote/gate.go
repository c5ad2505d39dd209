package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// GateConfig limits the calls to one provider.
type GateConfig struct {
	// Rate is the sustained request rate per second; 0 means unlimited.
	Rate float64
	// Burst is the bucket size; 0 means 1, so requests are spaced at
	// least 1/Rate apart and no window of one second sees more than Rate.
	Burst int
	// Concurrency caps requests in flight; 0 means unlimited.
	Concurrency int
	// Retries429 is how many times a 429 answer is retried; 0 means 3,
	// negative means none.
	Retries429 int
	// MaxRetryAfter caps one wait after a 429; 0 means 60s.
	MaxRetryAfter time.Duration
	// Backoff429 is the wait after a 429 without Retry-After, doubled on
	// each further 429; 0 means 1s.
	Backoff429 time.Duration
}

// Gate admits calls to one provider: it waits for the rate limiter and a
// concurrency slot, and when the provider answers 429 it pauses every call
// through the gate for the Retry-After time (or an exponential back-off)
// and retries. It is safe for concurrent use.
type Gate struct {
	cfg GateConfig
	lim *rate.Limiter
	sem chan struct{}

	mu    sync.Mutex
	until time.Time
}

// NewGate returns a Gate for cfg.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Burst <= 0 {
		cfg.Burst = 1
	}
	if cfg.Retries429 == 0 {
		cfg.Retries429 = 3
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = 60 * time.Second
	}
	if cfg.Backoff429 <= 0 {
		cfg.Backoff429 = time.Second
	}
	g := &Gate{cfg: cfg}
	if cfg.Rate > 0 {
		g.lim = rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst)
	}
	if cfg.Concurrency > 0 {
		g.sem = make(chan struct{}, cfg.Concurrency)
	}
	return g
}

// Do runs fn once admitted, retrying it after 429 answers (a *httpretry.StatusError
// with Code 429) as configured. It returns fn's last error, or the context's
// error when ctx ends while waiting.
func (g *Gate) Do(ctx context.Context, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if err := g.admit(ctx); err != nil {
			return err
		}
		err := fn(ctx)
		g.release()
		var se *httpretry.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || attempt >= g.cfg.Retries429 {
			return err
		}
		wait := se.RetryAfter
		if wait <= 0 {
			wait = g.cfg.Backoff429 << attempt
		}
		g.pause(min(wait, g.cfg.MaxRetryAfter))
	}
}

func (g *Gate) pause(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := time.Now().Add(d); t.After(g.until) {
		g.until = t
	}
}

func (g *Gate) admit(ctx context.Context) error {
	for {
		g.mu.Lock()
		wait := time.Until(g.until)
		g.mu.Unlock()
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g.lim != nil {
		if err := g.lim.Wait(ctx); err != nil {
			g.release()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The limiter refuses up front when the wait would pass the
			// deadline; report it as the timeout it amounts to.
			return fmt.Errorf("rate limit wait: %w (%v)", context.DeadlineExceeded, err)
		}
	}
	return nil
}

func (g *Gate) release() {
	if g.sem != nil {
		<-g.sem
	}
}
