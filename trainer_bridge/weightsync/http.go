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

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// The exponential waits between retries of one call (no jitter: a sync
// is one caller per endpoint).
const (
	retryWaitMin = 250 * time.Millisecond
	retryWaitMax = 5 * time.Second
)

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
// are an *httpretry.StatusError at once.
func (c *caller) call(ctx context.Context, ep endpoint, method, route string, body []byte) (*reply, error) {
	return c.callURL(ctx, method, ep.url(route), ep.name+route, body)
}

// policy is the retry policy of one call: Options.CheckRetry (default
// httpretry.DefaultCheckRetry: transport failures, 408, 429 and 5xx but
// 501) and Options.Backoff (default 250 ms doubling per retry up to 5 s, or
// the answer's Retry-After), retrying until the next wait would pass
// Options.RetryFor; a single attempt when c.once.
func (c *caller) policy() httpretry.Policy {
	p := httpretry.Policy{
		Retries:    -1,
		MaxElapsed: c.o.RetryFor,
		WaitMin:    retryWaitMin,
		WaitMax:    retryWaitMax,
		CheckRetry: c.o.CheckRetry,
		Backoff:    c.o.Backoff,
	}
	if c.once {
		p.Retries = 0
	}
	return p
}

// callURL is call with a full URL; shown is the URL as errors show it.
func (c *caller) callURL(ctx context.Context, method, target, shown string, body []byte) (*reply, error) {
	var rep *reply
	var last error
	err := c.policy().Do(ctx, func(ctx context.Context) (*http.Response, error) {
		r, resp, err := c.attempt(ctx, method, target, shown, body)
		if err == nil && resp.StatusCode/100 != 2 {
			err = fmt.Errorf("%s %s: %w", method, shown, httpretry.NewStatusError(resp.StatusCode, resp.Header, snippet(r.body), c.o.APIKey))
		}
		rep, last = r, err
		return resp, err
	})
	var ex *httpretry.ExhaustedError
	switch {
	case err == nil:
		return rep, nil
	case errors.As(err, &ex) && c.once:
		return nil, ex.Err
	case errors.As(err, &ex):
		return nil, fmt.Errorf("%w: gave up after %d attempts in %v: %w", ErrUnavailable, ex.Attempts, c.o.RetryFor, ex.Err)
	case err != last:
		// The context ended Do's wait (or its check) after a failure.
		return nil, fmt.Errorf("%s %s: %w", method, shown, err)
	}
	return nil, err
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

// isStatus reports whether err holds an *httpretry.StatusError with code.
func isStatus(err error, code int) bool { return httpretry.Code(err) == code }
