package httpretry

import (
	"context"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/mgrpo/mgrpo/internal/retryafter"
)

// The defaults of a Policy's zero fields.
const (
	DefaultWaitMin       = 100 * time.Millisecond
	DefaultWaitMax       = 5 * time.Second
	DefaultMaxRetryAfter = time.Minute
)

// Jitter spreads the exponential waits of a Policy so that clients
// retrying together do not retry in step: a wait d is drawn uniformly from
// [d·(1−Below), d·(1+Above)]. The zero Jitter keeps waits exact.
type Jitter struct {
	Below, Above float64
}

// Policy is a retry policy: which failures are retried, how often and how
// long to wait before each retry. Its CheckRetry and Backoff are
// go-retryablehttp's function types, so the same Policy configures a
// retryablehttp.Client (Configure) or drives Do.
type Policy struct {
	// Retries is the most retries after the first attempt: 0 means none,
	// negative no limit (Do then stops only at MaxElapsed).
	Retries int
	// MaxElapsed bounds the time Do keeps retrying: a retry whose wait
	// would end more than MaxElapsed after the first attempt began is not
	// made. Zero means no bound. A retryablehttp.Client ignores it (bound
	// its requests' contexts instead).
	MaxElapsed time.Duration
	// WaitMin and WaitMax bound the exponential waits: WaitMin·2^retry, at
	// most WaitMax, spread by Jitter (defaults DefaultWaitMin and
	// DefaultWaitMax).
	WaitMin, WaitMax time.Duration
	// Jitter spreads the exponential waits (zero: exact waits).
	Jitter Jitter
	// MaxRetryAfter caps the wait an answer's Retry-After asks for
	// (default DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// CheckRetry decides what is retried (nil: DefaultCheckRetry).
	CheckRetry retryablehttp.CheckRetry
	// Backoff gives the waits (nil: the policy's Exponential).
	Backoff retryablehttp.Backoff
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p Policy) WithDefaults() Policy {
	if p.WaitMin <= 0 {
		p.WaitMin = DefaultWaitMin
	}
	if p.WaitMax <= 0 {
		p.WaitMax = DefaultWaitMax
	}
	p.WaitMax = max(p.WaitMax, p.WaitMin)
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.CheckRetry == nil {
		p.CheckRetry = DefaultCheckRetry
	}
	if p.Backoff == nil {
		p.Backoff = p.Exponential
	}
	return p
}

// Configure sets c's retries, waits, CheckRetry and Backoff from p (its
// defaults for zero fields). A negative Retries leaves c without retries.
func (p Policy) Configure(c *retryablehttp.Client) {
	p = p.WithDefaults()
	c.RetryMax = max(p.Retries, 0)
	c.RetryWaitMin, c.RetryWaitMax = p.WaitMin, p.WaitMax
	c.CheckRetry = p.CheckRetry
	c.Backoff = p.Backoff
}

// Wait returns the wait before retry number retry (0 for the first) after
// resp (nil when the attempt got no answer): p's Backoff between its
// WaitMin and WaitMax.
func (p Policy) Wait(retry int, resp *http.Response) time.Duration {
	p = p.WithDefaults()
	return p.Backoff(p.WaitMin, p.WaitMax, retry, resp)
}

// Exponential is a retryablehttp.Backoff (as the method value
// p.Exponential): when resp carries a Retry-After header (delay-seconds or
// an HTTP date), the wait it asks for, at most p.MaxRetryAfter (default
// DefaultMaxRetryAfter); otherwise minWait·2^retry, at most maxWait, spread
// by p.Jitter.
func (p Policy) Exponential(minWait, maxWait time.Duration, retry int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); ok {
			limit := p.MaxRetryAfter
			if limit <= 0 {
				limit = DefaultMaxRetryAfter
			}
			return min(d, limit)
		}
	}
	d := minWait
	for i := 0; i < retry && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	lo := d - time.Duration(float64(d)*p.Jitter.Below)
	span := time.Duration(float64(d) * (p.Jitter.Below + p.Jitter.Above))
	if span <= 0 {
		return d
	}
	return lo + rand.N(span+1)
}

// DefaultBackoff is the zero Policy's Exponential: Retry-After up to
// DefaultMaxRetryAfter, else exact exponential waits.
func DefaultBackoff(minWait, maxWait time.Duration, retry int, resp *http.Response) time.Duration {
	return Policy{}.Exponential(minWait, maxWait, retry, resp)
}

// DefaultCheckRetry is the default CheckRetry. Once ctx is done nothing is
// retried and ctx's error is returned. An error that reports
// Retryable() bool (a *StatusError, or an error wrapping one) is retried
// when it says so; other errors are transport failures (refused, reset,
// timed out, cut mid-body) and are retried, except certificate errors and
// unparsable URLs. Without an error, the answer's status decides (see
// Retryable); no answer and no error is not retried.
func DefaultCheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		var r interface{ Retryable() bool }
		if errors.As(err, &r) {
			return r.Retryable(), nil
		}
		return !permanent(err), nil
	}
	if resp == nil {
		return false, nil
	}
	return Retryable(resp.StatusCode), nil
}

// permanent reports transport errors no retry can cure: a certificate the
// client does not trust and a URL that does not parse.
func permanent(err error) bool {
	var unknown x509.UnknownAuthorityError
	var punknown *x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var pinvalid *x509.CertificateInvalidError
	var ue *url.Error
	return errors.As(err, &unknown) || errors.As(err, &punknown) ||
		errors.As(err, &invalid) || errors.As(err, &pinvalid) ||
		(errors.As(err, &ue) && ue.Op == "parse")
}
