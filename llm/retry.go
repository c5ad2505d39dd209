package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpretry"
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
	// CallTimeout is the deadline of one call, attempts and waits included.
	// Zero means DefaultCallAttempts times the call's attempt timeout.
	CallTimeout time.Duration
	// AttemptTimeout bounds one attempt, from the moment it has an
	// endpoint slot until its answer is read. An attempt that runs out is
	// abandoned: its request context is cancelled, which closes the
	// connection (vLLM and SGLang abort a generation whose client went
	// away), it counts as a failure of its endpoint, and the call is retried
	// on another endpoint of the pool when there is one. Zero derives it
	// from the call's completion cap with AttemptTimeoutFor; an attempt
	// timeout longer than the call timeout is cut to it.
	AttemptTimeout time.Duration
	// IdleTimeout bounds the silence of a streamed attempt (Config.Stream):
	// from the request until the first byte of the answer, and between
	// any two reads of the event stream. A stream that sends nothing for
	// that long is a stall: its connection is closed, it counts as a
	// timeout of its endpoint and the call is retried at once, while a
	// live stream may run for the whole attempt timeout. Zero means
	// DefaultIdleTimeout. Unstreamed attempts have no idle bound (a server
	// sends nothing until the answer is whole).
	IdleTimeout time.Duration
	// AttemptTimeoutFor gives the attempt timeout of a call whose completion
	// is capped at maxTokens (0: the request leaves the cap to the server)
	// when AttemptTimeout is zero. Nil means DefaultAttemptTimeout.
	AttemptTimeoutFor AttemptTimeoutFunc
}

// AttemptTimeoutFunc returns how long one attempt of a call may take when
// the call's completion is capped at maxTokens tokens (0 when the request
// sets no cap). It must return a positive duration.
type AttemptTimeoutFunc func(maxTokens int) time.Duration

// The parts of DefaultAttemptTimeout and of the default call timeout.
const (
	// DefaultAttemptBase is the time an attempt gets whatever it
	// generates: queueing behind a full batch and the prefill of a long
	// prompt (seconds for a 32k-token context on a loaded GPU).
	DefaultAttemptBase = 60 * time.Second
	// DefaultAttemptPerToken is the time an attempt gets per completion
	// token it may generate: a decode rate of 10 tokens/s, the low end of
	// what a loaded vLLM or SGLang server gives one sequence (a healthy one
	// gives 20 to 60), so a slow but live generation is not cut.
	DefaultAttemptPerToken = 100 * time.Millisecond
	// DefaultAssumedMaxTokens is the completion cap DefaultAttemptTimeout
	// assumes for a call that sets none.
	DefaultAssumedMaxTokens = 4096
	// DefaultIdleTimeout is a streamed attempt's idle timeout when
	// RetryPolicy.IdleTimeout is zero. It is DefaultAttemptBase because the
	// first event comes only after the request's queueing and prefill,
	// which that base covers; between tokens a live engine is silent for
	// milliseconds.
	DefaultIdleTimeout = DefaultAttemptBase
	// DefaultCallAttempts is how many attempt timeouts a call gets when
	// its CallTimeout is zero: a dead attempt, its retry elsewhere, and one
	// more.
	DefaultCallAttempts = 3
)

// DefaultAttemptTimeout is DefaultAttemptBase plus DefaultAttemptPerToken
// for every token the completion may have: 60 s + 100 ms × maxTokens, with
// maxTokens 0 (no cap in the request) counted as DefaultAssumedMaxTokens.
// At the agents' default of 2048 tokens an attempt gets 4m24.8s and a call
// DefaultCallAttempts times that, 13m14.4s.
func DefaultAttemptTimeout(maxTokens int) time.Duration {
	if maxTokens <= 0 {
		maxTokens = DefaultAssumedMaxTokens
	}
	return DefaultAttemptBase + time.Duration(maxTokens)*DefaultAttemptPerToken
}

// DefaultRetryPolicy is the policy used for zero fields of a RetryPolicy.
// Its zero CallTimeout and AttemptTimeout derive both deadlines from each
// call's completion cap (see Timeouts).
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:       6,
	WaitMin:           50 * time.Millisecond,
	WaitMax:           5 * time.Second,
	MaxRetryAfter:     30 * time.Second,
	AttemptTimeoutFor: DefaultAttemptTimeout,
}

// validate reports timeouts that cannot work: negative ones, an attempt
// timeout that is not shorter than the call timeout, and an idle timeout
// not shorter than the attempt timeout, when both are set.
func (p RetryPolicy) validate() error {
	var errs []error
	if p.CallTimeout < 0 {
		errs = append(errs, fmt.Errorf("call timeout %v: must not be negative (0 = %d attempt timeouts)", p.CallTimeout, DefaultCallAttempts))
	}
	if p.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("attempt timeout %v: must not be negative (0 = derived from max_tokens)", p.AttemptTimeout))
	}
	if p.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("idle timeout %v: must not be negative (0 = %v)", p.IdleTimeout, DefaultIdleTimeout))
	}
	if p.IdleTimeout > 0 && p.AttemptTimeout > 0 && p.IdleTimeout >= p.AttemptTimeout {
		errs = append(errs, fmt.Errorf("idle timeout %v: must be shorter than the attempt timeout %v, which bounds the whole stream", p.IdleTimeout, p.AttemptTimeout))
	}
	if p.CallTimeout > 0 && p.AttemptTimeout >= p.CallTimeout {
		errs = append(errs, fmt.Errorf("attempt timeout %v: must be shorter than the call timeout %v", p.AttemptTimeout, p.CallTimeout))
	}
	return errors.Join(errs...)
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
	if p.AttemptTimeoutFor == nil {
		p.AttemptTimeoutFor = d.AttemptTimeoutFor
	}
	if p.IdleTimeout <= 0 {
		p.IdleTimeout = DefaultIdleTimeout
	}
	return p
}

// Timeouts returns the attempt and call timeouts of a call whose completion
// is capped at maxTokens (0: no cap in the request): the policy's own
// values where set, else the attempt timeout from AttemptTimeoutFor and the
// call timeout DefaultCallAttempts times the attempt timeout. The attempt
// timeout is never longer than the call timeout.
func (p RetryPolicy) Timeouts(maxTokens int) (attempt, call time.Duration) {
	p = p.withDefaults()
	attempt = p.AttemptTimeout
	if attempt <= 0 {
		attempt = p.AttemptTimeoutFor(maxTokens)
	}
	if attempt <= 0 {
		// A policy function broke its contract; a call must still end.
		attempt = DefaultAttemptTimeout(maxTokens)
	}
	call = p.CallTimeout
	if call <= 0 {
		call = DefaultCallAttempts * attempt
	}
	return min(attempt, call), call
}

// policy is p as the project's one retry policy: MaxAttempts−1 retries,
// exponential waits between WaitMin and WaitMax with equal jitter (each
// wait drawn from its upper half), a server's Retry-After honoured up to
// MaxRetryAfter, and CheckRetry. Zero fields must be defaulted first.
func (p RetryPolicy) policy() httpretry.Policy {
	return httpretry.Policy{
		Retries:       p.MaxAttempts - 1,
		WaitMin:       p.WaitMin,
		WaitMax:       p.WaitMax,
		Jitter:        httpretry.Jitter{Below: 0.5},
		MaxRetryAfter: p.MaxRetryAfter,
		CheckRetry:    CheckRetry,
	}
}

// CheckRetry decides whether an attempt is retried: httpretry's
// DefaultCheckRetry on the errors the response handler returns
// (*httpretry.StatusError for non-200, retried for 408, 429 and 5xx but
// 501; *DecodeError for bad bodies, always retried) and on transport
// failures (retried except certificate errors). Context cancellation and
// deadline end the call at once. Its signature is go-retryablehttp's
// CheckRetry.
func CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err == nil {
		// The response handler has not judged the answer yet (or accepted
		// it); it reports its verdict through err on the second call.
		return false, nil
	}
	if retry, _ := httpretry.DefaultCheckRetry(ctx, nil, err); retry {
		return true, nil
	}
	return false, err
}
