package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// maxBody caps a response body read; token ids of a long context are large
// but far below this.
const maxBody = 256 << 20

// callState is the per-call state the routing transport and the response
// handler share. One call's attempts run one after another on the caller's
// goroutine, so it needs no lock.
type callState struct {
	key    string
	pin    *endpoint // route every attempt here while it is in rotation
	avoid  int
	last   *endpoint
	epoch  uint64 // last's failure epoch when the attempt started
	status int
	tries  int
	// attemptTimeout bounds each attempt (see RetryPolicy.AttemptTimeout).
	attemptTimeout time.Duration
	// decode turns a 200 body into the call's result; its error decides a
	// retry through CheckRetry.
	decode func(body []byte, h http.Header) error
	// idleTimeout, when positive, marks the call's attempts as streamed:
	// each is ended once it receives nothing for that long (see
	// RetryPolicy.IdleTimeout), and its body is an event stream.
	idleTimeout time.Duration
	// cut, for a streamed call, keeps what an attempt's stream carried
	// before it was cut (idle, timed out, dropped) for a partial turn.
	cut func(body []byte, h http.Header, reason string)
}

type callStateKey struct{}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// attemptTimeoutKey carries a call's attempt timeout from Chat to post.
type attemptTimeoutKey struct{}

// withAttemptTimeout returns ctx carrying the attempt timeout d of its call.
func withAttemptTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, attemptTimeoutKey{}, d)
}

// transport routes each attempt to an endpoint of the pool: it rewrites the
// placeholder URL, takes the endpoint's in-flight slot for the life of the
// response, applies the attempt timeout and records transport failures.
type transport struct {
	pool   *Pool
	base   http.RoundTripper
	apiKey string
	role   string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := stateFrom(req.Context())
	if st == nil {
		return nil, errors.New("llm transport: request without call state")
	}
	var e *endpoint
	// A pinned call (the generation after a tokenize) stays on its
	// endpoint unless that is out of rotation or has just failed it.
	if st.pin != nil && st.pin.idx != st.avoid && !t.pool.isEjected(st.pin) {
		e = st.pin
		e.outstanding.Add(1)
	} else {
		e = t.pool.pick(st.key, st.avoid)
	}
	st.last, st.status, st.epoch = e, 0, t.pool.epoch(e)
	st.tries++
	if err := e.sem.Acquire(req.Context(), 1); err != nil {
		e.outstanding.Add(-1)
		return nil, err
	}
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if st.attemptTimeout > 0 {
		// The cause tells the attempt's own deadline from the call's: only
		// the former is the endpoint's fault.
		ctx, cancel = context.WithTimeoutCause(ctx, st.attemptTimeout, ErrAttemptTimeout)
	}
	var idle *idleWatch
	if st.idleTimeout > 0 {
		ctx, idle = watchIdle(ctx, st.idleTimeout)
	}
	release := func() {
		idle.stop()
		cancel()
		e.sem.Release(1)
		e.outstanding.Add(-1)
	}
	r := req.Clone(ctx)
	u := *e.base
	u.Path = e.base.Path + req.URL.Path
	u.User = nil
	r.URL, r.Host = &u, ""
	// The server's state does not change with an inference request, so
	// net/http may send it again on another connection when a reused one
	// fails before any answer (the server closed it while idle), as it
	// does for a GET. A nil value marks the request so without sending
	// the header.
	r.Header["Idempotency-Key"] = nil
	if t.apiKey != "" {
		r.Header.Set("Authorization", "Bearer "+t.apiKey)
	} else if e.base.User != nil {
		pw, _ := e.base.User.Password()
		r.SetBasicAuth(e.base.User.Username(), pw)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		timedOut, stalled := attemptTimedOut(ctx), idleTimedOut(ctx)
		release()
		if req.Context().Err() == nil {
			class := ClassConnection
			if timedOut || stalled || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err) {
				class = ClassTimeout
			}
			t.pool.met.failure(t.role, e.display, class)
			t.pool.report(e, false)
			st.avoid = e.idx
		}
		if timedOut {
			return nil, fmt.Errorf("%s: %w after %v, connection closed: %w", e.display, ErrAttemptTimeout, st.attemptTimeout, err)
		}
		if stalled {
			return nil, fmt.Errorf("%s: %w: no answer for %v, connection closed: %w", e.display, ErrIdleTimeout, st.idleTimeout, err)
		}
		return nil, fmt.Errorf("%s: %w", e.display, err)
	}
	st.status = resp.StatusCode
	resp.Body = &releaseBody{ReadCloser: idle.body(resp.Body), release: release}
	return resp, nil
}

// attemptTimedOut reports whether an attempt's context ended by the
// attempt's own deadline (not the call's, nor a cancellation).
func attemptTimedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrAttemptTimeout)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (p *Pool) isEjected(e *endpoint) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return e.ejected
}

// releaseBody frees the endpoint slot when the body is closed, once.
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// handleResponse reads and judges one answer. It runs inside
// go-retryablehttp's loop, so its error decides whether the attempt is
// retried (through CheckRetry).
func (c *Client) handleResponse(resp *http.Response) error {
	defer resp.Body.Close()
	st := stateFrom(resp.Request.Context())
	e := st.last
	buf := getBodyBuffer()
	defer putBodyBuffer(buf)
	if resp.ContentLength > 0 && resp.ContentLength <= maxBody {
		buf.Grow(int(resp.ContentLength))
	}
	_, rerr := buf.ReadFrom(io.LimitReader(resp.Body, maxBody))
	// body is only valid until handleResponse returns: everything decoded
	// from it is copied out (errors keep string copies).
	body := buf.Bytes()
	if resp.StatusCode != http.StatusOK {
		serr := fmt.Errorf("%s: %w", e.display, httpretry.NewStatusError(resp.StatusCode, resp.Header, errorMessage(body), c.apiKey))
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			c.met.failure(c.role, e.display, ClassStatus429)
			st.avoid = e.idx
		case resp.StatusCode >= 500:
			c.met.failure(c.role, e.display, ClassStatus5xx)
			c.pool.report(e, false)
			st.avoid = e.idx
		default:
			c.met.failure(c.role, e.display, ClassStatus4xx)
		}
		return serr
	}
	if rerr != nil && attemptTimedOut(resp.Request.Context()) {
		// The attempt's deadline passed while the answer was arriving.
		c.met.failure(c.role, e.display, ClassTimeout)
		c.pool.report(e, false)
		st.avoid = e.idx
		st.keepCut(body, resp.Header, ErrAttemptTimeout.Error())
		return fmt.Errorf("%s: %w after %v, connection closed while reading the answer: %v", e.display, ErrAttemptTimeout, st.attemptTimeout, rerr)
	}
	if rerr != nil && idleTimedOut(resp.Request.Context()) {
		// The stream went silent: a stall, however long the generation
		// may still have had.
		c.met.failure(c.role, e.display, ClassTimeout)
		c.pool.report(e, false)
		st.avoid = e.idx
		st.keepCut(body, resp.Header, ErrIdleTimeout.Error())
		return fmt.Errorf("%s: %w: nothing received for %v, connection closed: %v", e.display, ErrIdleTimeout, st.idleTimeout, rerr)
	}
	if rerr != nil {
		st.keepCut(body, resp.Header, "stream cut: "+rerr.Error())
		c.met.failure(c.role, e.display, ClassDecode)
		c.pool.report(e, false)
		st.avoid = e.idx
		return &DecodeError{Endpoint: e.display, Err: fmt.Errorf("%w: reading body: %v", ErrMalformedResponse, rerr), Snippet: snippet(body)}
	}
	check := precheckBody
	if st.idleTimeout > 0 {
		check = precheckStream
	}
	if err := check(resp.Header.Get("Content-Type"), body); err != nil {
		c.met.failure(c.role, e.display, ClassDecode)
		c.pool.report(e, false)
		st.avoid = e.idx
		return &DecodeError{Endpoint: e.display, Err: err, Snippet: snippet(body)}
	}
	if err := st.decode(body, resp.Header); err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			de.Endpoint = e.display
			if errors.Is(err, ErrAborted) {
				c.met.failure(c.role, e.display, ClassAbort)
			} else {
				c.met.failure(c.role, e.display, ClassDecode)
				c.pool.report(e, false)
			}
			st.avoid = e.idx
		}
		return err
	}
	c.pool.reportAttempt(e, true, st.epoch)
	return nil
}

// bodyBuffers recycles response body buffers: a token-capturing answer is
// tens to hundreds of kilobytes, and growing a fresh slice for each one
// was a tenth of a call's CPU.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest body buffer kept for reuse.
const maxPooledBody = 4 << 20

func getBodyBuffer() *bytes.Buffer {
	b := bodyBuffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBodyBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		bodyBuffers.Put(b)
	}
}

// precheckBody rejects bodies that are not a JSON object before decoding:
// HTML pages (proxies, load balancers) and event streams.
func precheckBody(contentType string, body []byte) error {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return fmt.Errorf("%w: empty body", ErrMalformedResponse)
	case bytes.HasPrefix(contentType2(contentType), []byte("text/html")) || trimmed[0] == '<':
		return ErrHTMLResponse
	case bytes.HasPrefix(contentType2(contentType), []byte("text/event-stream")) || bytes.HasPrefix(trimmed, []byte("data:")):
		if !bytes.Contains(trimmed, []byte("data: [DONE]")) {
			return ErrStreamEnded
		}
		return fmt.Errorf("%w: event stream answer to a non-streaming request", ErrMalformedResponse)
	case trimmed[0] != '{':
		return fmt.Errorf("%w: body is not a JSON object", ErrMalformedResponse)
	}
	return nil
}

// precheckStream rejects bodies of a streamed call that cannot be an
// event stream: empty ones and HTML pages. The stream decoders judge the
// rest, so a JSON object in place of events is a malformed stream.
func precheckStream(contentType string, body []byte) error {
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
		return fmt.Errorf("%w: empty body", ErrMalformedResponse)
	case bytes.HasPrefix(contentType2(contentType), []byte("text/html")) || trimmed[0] == '<':
		return ErrHTMLResponse
	}
	return nil
}

// keepCut hands the body an attempt's stream carried before it was cut to
// the call's cut function, if it has one.
func (st *callState) keepCut(body []byte, h http.Header, reason string) {
	if st.cut != nil && len(body) > 0 {
		st.cut(body, h, reason)
	}
}

func contentType2(ct string) []byte { return bytes.ToLower(bytes.TrimSpace([]byte(ct))) }

// post runs one HTTP exchange with retries: body is POSTed to path on an
// endpoint the pool picks per attempt, and decode consumes the 200 body.
// It returns the endpoint of the last attempt and the attempt count.
func (c *Client) post(ctx context.Context, key string, pin *endpoint, path string, body []byte, decode func([]byte, http.Header) error) (*endpoint, int, error) {
	return c.send(ctx, &callState{key: key, pin: pin, avoid: -1, decode: decode}, path, body)
}

// postStream is post for a streamed request: every attempt is bounded by
// the idle timeout too, decode gets the whole event stream, and cut gets
// the events an attempt received before it was cut.
func (c *Client) postStream(ctx context.Context, key string, pin *endpoint, path string, body []byte, decode func([]byte, http.Header) error, cut func([]byte, http.Header, string)) (*endpoint, int, error) {
	st := &callState{key: key, pin: pin, avoid: -1, decode: decode, idleTimeout: c.retry.IdleTimeout, cut: cut}
	return c.send(ctx, st, path, body)
}

// send runs post's exchange for st.
func (c *Client) send(ctx context.Context, st *callState, path string, body []byte) (*endpoint, int, error) {
	st.attemptTimeout, _ = ctx.Value(attemptTimeoutKey{}).(time.Duration)
	ctx = context.WithValue(ctx, callStateKey{}, st)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, "http://pool"+path, body)
	if err != nil {
		return nil, 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if pin, ok := weightVersionPin(ctx, c.role); ok {
		req.Header.Set(WeightVersionPinHeader, pin)
	}
	req.SetResponseHandler(c.handleResponse)
	resp, err := c.http.Do(req)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil {
		return st.last, st.tries, nil
	}
	ep := "<no endpoint>"
	if st.last != nil {
		ep = st.last.display
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		c.met.failure(c.role, ep, ClassCanceled)
	}
	c.met.giveUp(c.role, ep, st.tries)
	return st.last, st.tries, &GiveUpError{Endpoint: ep, Status: st.status, Attempts: st.tries, Err: err}
}
