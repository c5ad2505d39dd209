package httptrainer

import (
	"context"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/mgrpo/mgrpo/internal/retryafter"
)

// CheckRetry decides whether a request is retried after resp (nil when the
// request failed) or err. A non-nil error returned ends the retries with
// that error.
type CheckRetry func(ctx context.Context, resp *http.Response, err error) (bool, error)

// DefaultCheckRetry retries connection errors and timeouts, 408, 429 and
// 5xx answers other than 501, and nothing once ctx is done. Other answers
// (4xx: the trainer refused the request) are not retried.
func DefaultCheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		var uerr *url.Error
		var cert *x509.UnknownAuthorityError
		if errors.As(err, &cert) || (errors.As(err, &uerr) && uerr.Op == "parse") {
			return false, err
		}
		return true, nil
	}
	switch s := resp.StatusCode; {
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
		return true, nil
	case s >= 500 && s != http.StatusNotImplemented:
		return true, nil
	}
	return false, nil
}

// Backoff returns how long to wait before retry attempt (counted from 0)
// after resp, which is nil when the request failed without an answer.
type Backoff func(min, max time.Duration, attempt int, resp *http.Response) time.Duration

// MaxRetryAfter caps the wait a Retry-After header can ask for.
const MaxRetryAfter = 5 * time.Minute

// DefaultBackoff honours a Retry-After header (seconds or an HTTP date) on
// any answer, up to MaxRetryAfter; otherwise it waits min·2^attempt, at most
// max, with up to a quarter of it added at random so that clients retrying
// together spread out.
func DefaultBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return d
		}
	}
	d := min
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	if d > 0 {
		d += time.Duration(rand.Int64N(int64(d)/4 + 1))
	}
	return d
}

// retryAfter reads a Retry-After value relative to now, capped at
// MaxRetryAfter.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	d, ok := retryafter.Parse(v, now)
	return min(d, MaxRetryAfter), ok
}
