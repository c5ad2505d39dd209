package weightsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CheckRetry decides whether a failed attempt is retried: resp is nil when
// err is not (the body is already read and closed). A non-nil error stops
// the retries with that error.
type CheckRetry func(ctx context.Context, resp *http.Response, err error) (bool, error)

// DefaultCheckRetry retries transport failures (connection refused or
// reset, an attempt's timeout), 5xx, 408 and 429, and nothing once ctx
// is done.
func DefaultCheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return true, nil
	}
	switch c := resp.StatusCode; {
	case c >= 500, c == http.StatusRequestTimeout, c == http.StatusTooManyRequests:
		return true, nil
	}
	return false, nil
}

// Backoff returns the wait before retry number attempt (0 for the first
// retry).
type Backoff func(attempt int) time.Duration

// DefaultBackoff waits 250 ms, doubling per retry up to 5 s.
func DefaultBackoff(attempt int) time.Duration {
	d := 250 * time.Millisecond
	for range attempt {
		if d *= 2; d >= 5*time.Second {
			return 5 * time.Second
		}
	}
	return d
}

// StatusError is an HTTP answer outside 2xx.
type StatusError struct {
	// Method and URL of the request (credentials redacted).
	Method, URL string
	Code        int
	// Body is the start of the answer's body.
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// reply is a 2xx answer.
type reply struct {
	header http.Header
	body   []byte
}

// maxBody caps what is read of an answer.
const maxBody = 1 << 20

// caller sends the sync's HTTP requests with the retry policy.
type caller struct {
	o Options
	// once makes every call a single attempt.
	once bool
}

// call sends method route to ep with body (nil: none) and returns the 2xx
// answer. Transient failures are retried for Options.RetryFor; the error
// is then ErrUnavailable wrapping the last failure. Other non-2xx answers
// are a *StatusError at once.
func (c *caller) call(ctx context.Context, ep endpoint, method, route string, body []byte) (*reply, error) {
	return c.callURL(ctx, method, ep.url(route), ep.name+route, body)
}

// callURL is call with a full URL; shown is the URL as errors show it.
func (c *caller) callURL(ctx context.Context, method, target, shown string, body []byte) (*reply, error) {
	deadline := time.Now().Add(c.o.RetryFor)
	for attempt := 0; ; attempt++ {
		rep, resp, err := c.attempt(ctx, method, target, shown, body)
		if err == nil && resp.StatusCode/100 == 2 {
			return rep, nil
		}
		retry, stop := c.o.CheckRetry(ctx, resp, err)
		if err == nil {
			err = &StatusError{Method: method, URL: shown, Code: resp.StatusCode, Body: snippet(rep.body)}
		}
		if stop != nil {
			return nil, fmt.Errorf("%s %s: %w", method, shown, stop)
		}
		if !retry || c.once {
			return nil, err
		}
		wait := c.o.Backoff(attempt)
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("%w: gave up after %d attempts in %v: %w", ErrUnavailable, attempt+1, c.o.RetryFor, err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%s %s: %w (last failure: %w)", method, shown, ctx.Err(), err)
		case <-timer.C:
		}
	}
}

// attempt sends one request. resp's body is read into the reply and
// closed.
func (c *caller) attempt(ctx context.Context, method, target, shown string, body []byte) (*reply, *http.Response, error) {
	actx, cancel := context.WithTimeout(ctx, c.o.AttemptTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, target, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, shown, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		// The url.Error's own text repeats the URL, with any credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, fmt.Errorf("%s %s: %w", method, shown, redactErr(err, c.o.APIKey))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read answer: %w", method, shown, err)
	}
	return &reply{header: resp.Header, body: b}, resp, nil
}

// snippet is the start of a body for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// redactErr hides the API key should an error repeat it.
func redactErr(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
}

// isStatus reports whether err is a *StatusError with code.
func isStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}
