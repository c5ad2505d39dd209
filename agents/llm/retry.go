package llm

import (
	"context"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RetryPolicy bounds the attempts of one call.
type RetryPolicy struct {
	// MaxAttempts is the most HTTP attempts per call, first included
	// (default 6).
	MaxAttempts int
	// WaitMin and WaitMax bound the jittered exponential backoff between
	// attempts (defaults 50ms and 5s).
	WaitMin, WaitMax time.Duration
	// MaxRetryAfter caps how long a server's Retry-After is honoured
	// (default 30s); a longer advertised wait is cut to it.
	MaxRetryAfter time.Duration
	// CallTimeout is the deadline of one call, attempts and waits included
	// (default 10 minutes).
	CallTimeout time.Duration
	// AttemptTimeout bounds one attempt, so a stalled server is retried
	// (default 0: only CallTimeout applies).
	AttemptTimeout time.Duration
}

// DefaultRetryPolicy is the policy used for zero fields of a RetryPolicy.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:   6,
	WaitMin:       50 * time.Millisecond,
	WaitMax:       5 * time.Second,
	MaxRetryAfter: 30 * time.Second,
	CallTimeout:   10 * time.Minute,
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.WaitMin <= 0 {
		p.WaitMin = d.WaitMin
	}
	if p.WaitMax <= 0 {
		p.WaitMax = d.WaitMax
	}
	if p.WaitMax < p.WaitMin {
		p.WaitMax = p.WaitMin
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = d.CallTimeout
	}
	return p
}

// Backoff returns the wait before retry number attempt (0-based): the
// server's Retry-After on 429 and 503 when present (capped at
// MaxRetryAfter), otherwise an exponential wait with equal jitter between
// WaitMin and WaitMax. Its signature is go-retryablehttp's Backoff.
func (p RetryPolicy) Backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return min(d, p.MaxRetryAfter)
		}
	}
	d := minWait
	for i := 0; i < attempt && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}

// retryAfter parses a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryable is implemented by errors that know whether another attempt can
// help.
type retryable interface{ Retryable() bool }

// CheckRetry decides whether an attempt is retried. Context cancellation
// and deadline end the call at once. Connection errors are retried except
// certificate errors; answers are judged through the errors the response
// handler returns (*StatusError for non-200, *DecodeError for bad bodies).
// Its signature is go-retryablehttp's CheckRetry.
func CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err == nil {
		// The response handler has not judged the answer yet (or accepted
		// it); it reports its verdict through err on the second call.
		return false, nil
	}
	var r retryable
	if errors.As(err, &r) {
		if r.Retryable() {
			return true, nil
		}
		return false, err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		var ce *x509.UnknownAuthorityError
		if errors.As(ue.Err, &ce) {
			return false, err
		}
	}
	var ve *x509.CertificateInvalidError
	if errors.As(err, &ve) {
		return false, err
	}
	// Anything else is a transport failure: refused, reset, timed-out
	// attempt, dropped mid-body.
	return true, nil
}
