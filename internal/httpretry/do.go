package httpretry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ExhaustedError is Do's error when a failure was worth retrying but the
// policy allowed no further attempt (Retries or MaxElapsed ran out).
type ExhaustedError struct {
	// Attempts is how many attempts were made.
	Attempts int
	// Err is the last attempt's error.
	Err error
}

// Error implements error.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("gave up after %d attempts: %v", e.Attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// Do calls attempt until it succeeds or p stops it, and is the retry loop
// of clients that do not send through go-retryablehttp. attempt returns
// the answer it got (nil when none; its body may be closed already) and
// its error: nil for success, a *StatusError (or an error wrapping one)
// for an unwanted status, another error for a failed exchange. p's
// CheckRetry judges every failure and its Backoff gives the wait, which
// ends early when ctx does.
//
// Do returns nil on success; the attempt's error when it is not retried
// (wrapped in CheckRetry's error when CheckRetry returns one the attempt's
// error does not already hold); an *ExhaustedError when the policy allows
// no further attempt; and ctx's error, with the last failure, when ctx
// ends during a wait.
func (p Policy) Do(ctx context.Context, attempt func(context.Context) (*http.Response, error)) error {
	p = p.WithDefaults()
	start := time.Now()
	for n := 0; ; n++ {
		resp, err := attempt(ctx)
		if err == nil {
			return nil
		}
		retry, stop := p.CheckRetry(ctx, resp, err)
		if stop != nil {
			if errors.Is(err, stop) {
				return err
			}
			return fmt.Errorf("%w: %w", stop, err)
		}
		if !retry {
			return err
		}
		if p.Retries >= 0 && n >= p.Retries {
			return &ExhaustedError{Attempts: n + 1, Err: err}
		}
		wait := p.Backoff(p.WaitMin, p.WaitMax, n, resp)
		if p.MaxElapsed > 0 && time.Since(start)+wait > p.MaxElapsed {
			return &ExhaustedError{Attempts: n + 1, Err: err}
		}
		if werr := Sleep(ctx, wait); werr != nil {
			return fmt.Errorf("%w (last failure: %w)", werr, err)
		}
	}
}

// Sleep waits d, or until ctx is done, and then returns ctx's error (nil
// when the wait ran out first).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
