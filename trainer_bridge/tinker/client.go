package tinker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/internal/retryafter"

	"github.com/mgrpo/mgrpo/internal/redact"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// apiKeyHeader is the header the SDK sends the key in (its client's
// auth_headers).
const apiKeyHeader = "X-API-Key"

// Backoff returns how long to wait before retry attempt (from 0) of a
// request; retryAfter is the server's Retry-After (0 when absent).
type Backoff func(attempt int, retryAfter time.Duration) time.Duration

// DefaultBackoff waits the server's Retry-After when given (at most a
// minute), else 0.5 s doubling per attempt up to 30 s.
func DefaultBackoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, time.Minute)
	}
	d := 500 * time.Millisecond << min(attempt, 6)
	return min(d, 30*time.Second)
}

// StatusError is an HTTP answer the bridge does not retry, with the
// server's message.
type StatusError struct {
	Route  string
	Status int
	// Detail is the server's message: the body's detail (FastAPI's form,
	// SkyRL's), error or message field, or the start of the body.
	Detail string
}

func (e *StatusError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s: HTTP %d", e.Route, e.Status)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Route, e.Status, e.Detail)
}

// client speaks HTTP to one Tinker service.
type client struct {
	base    string // scheme://host[/prefix], no trailing slash
	key     string
	keyEnv  string
	http    *http.Client
	backoff Backoff
	retries int
	poll    time.Duration
}

// errRetry marks an answer worth retrying after the backoff.
type errRetry struct {
	err        error
	retryAfter time.Duration
}

func (e *errRetry) Error() string { return e.err.Error() }
func (e *errRetry) Unwrap() error { return e.err }

// errResubmit is retrieve_future's 410: the future is gone, the request
// must be sent again.
var errResubmit = errors.New("future expired (HTTP 410)")

// do sends one request and decodes a 200's body into out. Failures come
// back classified: *errRetry for what the caller retries, errResubmit, or
// a *StatusError. The key never appears in an error.
func (c *client) do(ctx context.Context, method, route string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/api/v1/"+route, rd)
	if err != nil {
		return fmt.Errorf("%s: %s", route, c.redact(err.Error()))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set(apiKeyHeader, c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Connection errors and timeouts: the server may or may not have
		// the request; resending it with its seq_id is harmless.
		return &errRetry{err: fmt.Errorf("%s: %s", route, c.redact(err.Error()))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &errRetry{err: fmt.Errorf("%s: read answer: %s", route, c.redact(err.Error()))}
	}
	switch st := resp.StatusCode; {
	case st == http.StatusOK:
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return &StatusError{Route: route, Status: st, Detail: "undecodable answer: " + c.redact(err.Error())}
		}
		return nil
	case st == http.StatusGone:
		return errResubmit
	case st == http.StatusTooManyRequests, st == http.StatusRequestTimeout, st >= 500:
		return &errRetry{err: c.statusError(route, st, data), retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	default:
		return c.statusError(route, st, data)
	}
}

func (c *client) statusError(route string, status int, body []byte) *StatusError {
	e := &StatusError{Route: route, Status: status, Detail: c.redact(detail(body))}
	if (status == http.StatusUnauthorized || status == http.StatusForbidden) && c.key == "" {
		e.Detail = strings.TrimSpace(e.Detail + " (no API key sent: $" + c.keyEnv + " is empty)")
	}
	return e
}

func (c *client) redact(s string) string { return redact.Secrets(s, c.key) }

// detail extracts the server's message from an error body: FastAPI's
// {"detail": "…"} (a string, or a list of validation errors), the SDK's
// {"error": "…"}, a {"message": "…"}, or the body's start.
func detail(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		for _, k := range []string{"detail", "error", "message"} {
			raw, ok := m[k]
			if !ok {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
			return clip(string(raw))
		}
	}
	return clip(strings.TrimSpace(string(body)))
}

func clip(s string) string {
	const n = 500
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// retryAfter is the wait a Retry-After value asks for, 0 for none.
func retryAfter(v string) time.Duration {
	d, _ := retryafter.Parse(v, time.Now())
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
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

// call sends a request, retrying what is worth retrying with the same
// body. A bare 400 (no message: a load balancer's, the SDK says) is
// retried too, three times. What cannot succeed is ErrRejected; retries
// used up are ErrUnavailable.
func (c *client) call(ctx context.Context, method, route string, body []byte, out any) error {
	bare400 := 0
	for attempt := 0; ; attempt++ {
		err := c.do(ctx, method, route, body, out)
		if err == nil {
			return nil
		}
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusBadRequest && se.Detail == "" && bare400 < 3 {
			bare400++
			err = &errRetry{err: se}
		}
		var re *errRetry
		switch {
		case errors.As(err, &re):
			if attempt >= c.retries {
				return fmt.Errorf("%w: %v (after %d attempts)", trainerbridge.ErrUnavailable, err, attempt+1)
			}
			if err := sleep(ctx, c.backoff(attempt, re.retryAfter)); err != nil {
				return err
			}
		case errors.Is(err, errResubmit):
			// Only retrieve_future answers 410; elsewhere it is final.
			return fmt.Errorf("%w: %s: %v", trainerbridge.ErrRejected, route, err)
		case errors.As(err, &se):
			return fmt.Errorf("%w: %w", trainerbridge.ErrRejected, se)
		default:
			return err
		}
	}
}

// futureRef is what a submitted request answers: the SDK's
// UntypedAPIFuture (request_id, model_id); SkyRL adds future_id and, for
// create_model, the model's id at once.
type futureRef struct {
	RequestID flexString `json:"request_id"`
	ModelID   string     `json:"model_id"`
}

// flexString takes a JSON string or number (request ids are strings in
// the SDK's types; a number is accepted).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("request_id: want a string or a number, got %s", clip(string(b)))
	}
	*f = flexString(n.String())
	return nil
}

// pollAnswer is the part of a retrieve_future answer the bridge reads
// before decoding the result: the SDK's TryAgainResponse and
// RequestFailedResponse.
type pollAnswer struct {
	Type     string          `json:"type"`
	Error    json.RawMessage `json:"error"`
	Category string          `json:"category"`
}

// submit sends a request that answers a future and waits for the
// future's result, decoded into out. A 410 while waiting sends the
// request again, with the same body (so the same seq_id).
func (c *client) submit(ctx context.Context, route string, body []byte, out any) (futureRef, error) {
	var ref futureRef
	for resubmits := 0; ; resubmits++ {
		ref = futureRef{}
		if err := c.call(ctx, http.MethodPost, route, body, &ref); err != nil {
			return ref, err
		}
		if ref.RequestID == "" {
			return ref, fmt.Errorf("%w: %s: answer without request_id", trainerbridge.ErrRejected, route)
		}
		err := c.wait(ctx, route, string(ref.RequestID), out)
		if !errors.Is(err, errResubmit) {
			return ref, err
		}
		if resubmits >= c.retries {
			return ref, fmt.Errorf("%w: %s: future expired %d times", trainerbridge.ErrUnavailable, route, resubmits+1)
		}
	}
}

// wait long-polls retrieve_future until the future resolves. try_again
// and 408 poll again; 429 and 5xx back off; 410 is errResubmit; a 200
// with error (and category) or a 4xx with a message is ErrRejected with
// the server's text.
func (c *client) wait(ctx context.Context, route, requestID string, out any) error {
	body, err := json.Marshal(map[string]string{"request_id": requestID})
	if err != nil {
		return err
	}
	failures := 0
	bare400 := 0
	for {
		var raw json.RawMessage
		pctx, cancel := context.WithTimeout(ctx, c.poll)
		err := c.do(pctx, http.MethodPost, "retrieve_future", body, &raw)
		cancel()
		if err == nil {
			var a pollAnswer
			if json.Unmarshal(raw, &a) != nil {
				// Not an object: not an answer of any known form.
				return fmt.Errorf("%w: %s: retrieve_future: unexpected answer %s", trainerbridge.ErrRejected, route, clip(string(raw)))
			}
			if a.Type == "try_again" {
				failures = 0
				continue
			}
			if len(a.Error) > 0 && string(a.Error) != "null" {
				msg := detail(append(append([]byte(`{"error":`), a.Error...), '}'))
				if a.Category != "" {
					msg += " (category " + a.Category + ")"
				}
				return fmt.Errorf("%w: %s: %s", trainerbridge.ErrRejected, route, c.redact(msg))
			}
			if out != nil {
				if err := json.Unmarshal(raw, out); err != nil {
					return fmt.Errorf("%w: %s: undecodable result: %v", trainerbridge.ErrRejected, route, err)
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errResubmit) {
			return errResubmit
		}
		var se *StatusError
		var re *errRetry
		switch {
		case errors.As(err, &re) && errors.As(re.err, &se) && se.Status == http.StatusRequestTimeout:
			// The long poll ran out on the server's side: poll again.
			failures = 0
			continue
		case errors.Is(err, context.DeadlineExceeded):
			// Our own poll timeout: the server holds the future longer
			// than we wait for it. Poll again.
			continue
		case errors.As(err, &re):
			if failures >= c.retries {
				return fmt.Errorf("%w: %s: retrieve_future: %v (after %d attempts)", trainerbridge.ErrUnavailable, route, err, failures+1)
			}
			if err := sleep(ctx, c.backoff(failures, re.retryAfter)); err != nil {
				return err
			}
			failures++
		case errors.As(err, &se) && se.Status == http.StatusBadRequest && se.Detail == "" && bare400 < 3:
			bare400++
		case errors.As(err, &se):
			return fmt.Errorf("%w: %s: %w", trainerbridge.ErrRejected, route, se)
		default:
			return err
		}
	}
}
