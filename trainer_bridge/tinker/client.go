package tinker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/internal/redact"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// apiKeyHeader is the header the SDK sends the key in (its client's
// auth_headers).
const apiKeyHeader = "X-API-Key"

// The backend's retry schedule: 0.5 s doubling per retry up to 30 s, or
// the server's Retry-After up to a minute.
const (
	retryWaitMin  = 500 * time.Millisecond
	retryWaitMax  = 30 * time.Second
	maxRetryAfter = time.Minute
)

// DefaultBackoff waits the server's Retry-After when given (at most a
// minute), else 0.5 s doubling per retry up to 30 s (the bounds the
// client passes as min and max). It is a retryablehttp.Backoff.
func DefaultBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	return httpretry.Policy{MaxRetryAfter: maxRetryAfter}.Exponential(min, max, attempt, resp)
}

// client speaks HTTP to one Tinker service.
type client struct {
	base    string // scheme://host[/prefix], no trailing slash
	key     string
	keyEnv  string
	http    *http.Client
	backoff retryablehttp.Backoff
	retries int
	poll    time.Duration
	// jwt is set in JWT mode (client/config's pjwt_auth_enabled): the
	// requests but client/config and auth/token carry its token instead
	// of the key.
	jwt *jwtSource
}

// errTransport marks a request that got no (whole) answer: the server may
// or may not have it, and resending it with its seq_id is harmless.
type errTransport struct{ err error }

func (e *errTransport) Error() string { return e.err.Error() }
func (e *errTransport) Unwrap() error { return e.err }

// policy is the client's retry policy for one call: c.retries retries
// spaced by c.backoff, judged by check.
func (c *client) policy(check retryablehttp.CheckRetry) httpretry.Policy {
	return httpretry.Policy{
		Retries:       c.retries,
		WaitMin:       retryWaitMin,
		WaitMax:       retryWaitMax,
		MaxRetryAfter: maxRetryAfter,
		CheckRetry:    check,
		Backoff:       c.backoff,
	}
}

// retryable reports whether a failure of do is worth another attempt:
// no whole answer, or a status httpretry retries (408, 429, 5xx but 501).
func retryable(err error) bool {
	var te *errTransport
	var se *httpretry.StatusError
	return errors.As(err, &te) || (errors.As(err, &se) && se.Retryable())
}

// bare400 reports whether err is a 400 without a message (a load
// balancer's, the SDK says), which is retried a few times.
func bare400(err error) bool {
	var se *httpretry.StatusError
	return errors.As(err, &se) && se.Code == http.StatusBadRequest && se.Message == ""
}

// errJWT is a request not sent because no JWT could be had for it: the
// trade at auth/token failed (after its own retries) and the token held
// has expired. It is final, and already says ErrRejected or
// ErrUnavailable.
type errJWT struct {
	route string
	err   error
}

func (e *errJWT) Error() string { return e.route + ": JWT refresh: " + e.err.Error() }
func (e *errJWT) Unwrap() error { return e.err }

// errResubmit is retrieve_future's 410: the future is gone, the request
// must be sent again.
var errResubmit = errors.New("future expired (HTTP 410)")

// do sends one request and decodes a 200's body into out; it returns the
// answer (its body read and closed; nil when there was none). Failures come
// back classified: *errTransport when no whole answer came, errResubmit, or
// an *httpretry.StatusError wrapped with the route. The key never appears
// in an error.
func (c *client) do(ctx context.Context, method, route string, body []byte, out any) (*http.Response, error) {
	return c.doOpts(ctx, method, route, body, reqOpts{}, out)
}

// reqOpts are a request's media types: Content-Type of the body and
// Accept (both application/json when empty).
type reqOpts struct{ contentType, accept string }

// Media types of the wire.
const (
	mediaJSON  = "application/json"
	mediaProto = "application/x-protobuf"
	// acceptProto is what the SDK asks a forward_backward's future with:
	// protobuf, JSON from a server that predates it.
	acceptProto = mediaProto + ", " + mediaJSON
)

// rawAnswer, as do's out, receives a 200's body undecoded, with its
// Content-Type.
type rawAnswer struct {
	data        []byte
	contentType string
}

func (a *rawAnswer) isProto() bool { return strings.Contains(a.contentType, mediaProto) }

// doOpts is do with the media types of o.
func (c *client) doOpts(ctx context.Context, method, route string, body []byte, o reqOpts, out any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/api/v1/"+route, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", route, c.redact(err.Error()))
	}
	if body != nil {
		req.Header.Set("Content-Type", cmp.Or(o.contentType, mediaJSON))
	}
	req.Header.Set("Accept", cmp.Or(o.accept, mediaJSON))
	cred := c.key
	if c.jwt != nil && !tokenRoutes[route] {
		if cred, err = c.jwt.get(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &errJWT{route: route, err: err}
		}
	}
	if cred != "" {
		req.Header.Set(apiKeyHeader, cred)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Connection errors and timeouts: the server may or may not have
		// the request; resending it with its seq_id is harmless.
		return nil, &errTransport{err: fmt.Errorf("%s: %s", route, c.redact(err.Error()))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return resp, &errTransport{err: fmt.Errorf("%s: read answer: %s", route, c.redact(err.Error()))}
	}
	switch st := resp.StatusCode; {
	case st == http.StatusOK:
		if out == nil {
			return resp, nil
		}
		if raw, ok := out.(*rawAnswer); ok {
			raw.data, raw.contentType = data, resp.Header.Get("Content-Type")
			return resp, nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return resp, fmt.Errorf("%s: %w", route, &httpretry.StatusError{Code: st, Message: "undecodable answer: " + c.redact(err.Error())})
		}
		return resp, nil
	case st == http.StatusGone:
		return resp, errResubmit
	default:
		return resp, c.statusError(route, resp, data)
	}
}

// statusError is the *httpretry.StatusError of an answer, wrapped with
// the route. Its message is the server's (see detail), with a hint when a
// 401 or 403 came to a request sent without a key.
func (c *client) statusError(route string, resp *http.Response, body []byte) error {
	se := httpretry.NewStatusError(resp.StatusCode, resp.Header, detail(body), c.secrets()...)
	if (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) && c.key == "" {
		se.Message = strings.TrimSpace(se.Message + " (no API key sent: $" + c.keyEnv + " is empty)")
	} else if se.Code == http.StatusUnauthorized && tokenRoutes[route] {
		// Only the key goes to these: it is the key that was refused.
		se.Message = strings.TrimSpace(se.Message + " (the key in $" + c.keyEnv + " was refused)")
	}
	return fmt.Errorf("%s: %w", route, se)
}

func (c *client) redact(s string) string { return redact.Secrets(s, c.secrets()...) }

// secrets are what must not appear in logs or errors: the key, and the
// JWT traded for it.
func (c *client) secrets() []string {
	if c.jwt != nil {
		return []string{c.key, c.jwt.current()}
	}
	return []string{c.key}
}

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

// call sends a request, retrying what is worth retrying with the same
// body. A bare 400 (no message: a load balancer's, the SDK says) is
// retried too, three times. What cannot succeed is ErrRejected; retries
// used up are ErrUnavailable.
func (c *client) call(ctx context.Context, method, route string, body []byte, out any) error {
	return c.callOpts(ctx, method, route, body, reqOpts{}, out)
}

// maxConflictRetries is how many times a 409 is retried: the SDK's HTTP
// layer retries 409 (a lock timeout, for its client) unless the answer
// says x-should-retry: false; a 409 that persists is a reused seq_id.
const maxConflictRetries = 3

// callOpts is call with the media types of o.
func (c *client) callOpts(ctx context.Context, method, route string, body []byte, o reqOpts, out any) error {
	bare, conflicts := 0, 0
	check := func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		var je *errJWT
		if errors.As(err, &je) {
			return false, nil
		}
		if bare400(err) && bare < 3 {
			bare++
			return true, nil
		}
		if httpretry.Code(err) == http.StatusConflict && conflicts < maxConflictRetries &&
			(resp == nil || !strings.EqualFold(resp.Header.Get("X-Should-Retry"), "false")) {
			conflicts++
			return true, nil
		}
		return retryable(err), nil
	}
	err := c.policy(check).Do(ctx, func(ctx context.Context) (*http.Response, error) {
		return c.doOpts(ctx, method, route, body, o, out)
	})
	var ex *httpretry.ExhaustedError
	var se *httpretry.StatusError
	var je *errJWT
	switch {
	case err == nil:
		return nil
	case errors.As(err, &je):
		return je
	case errors.As(err, &ex):
		return fmt.Errorf("%w: %v (after %d attempts)", trainerbridge.ErrUnavailable, ex.Err, ex.Attempts)
	case errors.Is(err, errResubmit):
		// Only retrieve_future answers 410; elsewhere it is final.
		return fmt.Errorf("%w: %s: %v", trainerbridge.ErrRejected, route, err)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %w", trainerbridge.ErrRejected, err)
	default:
		return err
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
	return c.waitOpts(ctx, route, requestID, reqOpts{}, out)
}

// protoDecoder is an out of waitOpts that reads a protobuf result.
type protoDecoder interface {
	decodeProto([]byte) error
}

// waitOpts is wait asking with o.accept; a protobuf answer is decoded by
// out's decodeProto, a JSON one as wait decodes it.
func (c *client) waitOpts(ctx context.Context, route, requestID string, o reqOpts, out any) error {
	body, err := json.Marshal(map[string]string{"request_id": requestID})
	if err != nil {
		return err
	}
	failures := 0
	bare := 0
	for {
		var ans rawAnswer
		pctx, cancel := context.WithTimeout(ctx, c.poll)
		resp, err := c.doOpts(pctx, http.MethodPost, "retrieve_future", body, reqOpts{accept: o.accept}, &ans)
		cancel()
		if err == nil && ans.isProto() {
			pd, ok := out.(protoDecoder)
			if !ok {
				return fmt.Errorf("%w: %s: retrieve_future: a protobuf answer to a request that asked for none", trainerbridge.ErrRejected, route)
			}
			if err := pd.decodeProto(ans.data); err != nil {
				return fmt.Errorf("%w: %s: undecodable protobuf result: %v", trainerbridge.ErrRejected, route, err)
			}
			return nil
		}
		raw := json.RawMessage(ans.data)
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
		var se *httpretry.StatusError
		var je *errJWT
		switch {
		case errors.As(err, &je):
			return fmt.Errorf("%s: %w", route, je)
		case httpretry.Code(err) == http.StatusRequestTimeout:
			// The long poll ran out on the server's side: poll again.
			failures = 0
			continue
		case errors.Is(err, context.DeadlineExceeded):
			// Our own poll timeout: the server holds the future longer
			// than we wait for it. Poll again.
			continue
		case retryable(err):
			if failures >= c.retries {
				return fmt.Errorf("%w: %s: retrieve_future: %v (after %d attempts)", trainerbridge.ErrUnavailable, route, err, failures+1)
			}
			if err := httpretry.Sleep(ctx, c.policy(nil).Wait(failures, resp)); err != nil {
				return err
			}
			failures++
		case bare400(err) && bare < 3:
			bare++
		case errors.As(err, &se):
			return fmt.Errorf("%w: %s: %w", trainerbridge.ErrRejected, route, err)
		default:
			return err
		}
	}
}
