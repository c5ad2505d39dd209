package httptrainer

import (
	"net/http"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// MaxRetryAfter caps the wait a Retry-After header can ask for.
const MaxRetryAfter = 5 * time.Minute

// retryJitter adds up to a quarter of each exponential wait at random, so
// that clients retrying together spread out.
var retryJitter = httpretry.Jitter{Above: 0.25}

// DefaultBackoff honours a Retry-After header (seconds or an HTTP date) on
// any answer, up to MaxRetryAfter; otherwise it waits min·2^attempt, at most
// max, with up to a quarter of it added at random so that clients retrying
// together spread out. It is a retryablehttp.Backoff.
func DefaultBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	return httpretry.Policy{Jitter: retryJitter, MaxRetryAfter: MaxRetryAfter}.Exponential(min, max, attempt, resp)
}

// policy is the Trainer's retry policy: Config's retries, wait bounds,
// CheckRetry (default httpretry.DefaultCheckRetry: connection errors and
// timeouts, 408, 429 and 5xx but 501, nothing once the context is done)
// and Backoff (default DefaultBackoff).
func (c Config) policy() httpretry.Policy {
	return httpretry.Policy{
		Retries:       c.RetryMax,
		WaitMin:       c.RetryWaitMin,
		WaitMax:       c.RetryWaitMax,
		Jitter:        retryJitter,
		MaxRetryAfter: MaxRetryAfter,
		CheckRetry:    c.CheckRetry,
		Backoff:       c.Backoff,
	}
}
