package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mgrpo/mgrpo/internal/redact"
)

// Restart backoff of a server whose session ended: the first restart is
// immediate, then each failed start doubles the wait up to maxBackoff.
const (
	baseBackoff = 250 * time.Millisecond
	maxBackoff  = 30 * time.Second
)

// ErrClosed is returned by calls made after the Set was closed.
var ErrClosed = errors.New("mcp server closed")

// server is one configured MCP server and its current session: started on
// first use, started again (with backoff) after its session ends, closed
// with the Set. Safe for concurrent use.
type server struct {
	cfg    ServerConfig
	log    *slog.Logger
	client *sdk.Client

	mu       sync.Mutex
	sess     *sdk.ClientSession
	proc     *process // the stdio process of sess, nil over HTTP
	fails    int
	retryAt  time.Time
	lastErr  error // the last failed start's, while retryAt is set
	closed   bool
	starting chan struct{} // closed when the start in progress ends

	// changed is set by the server's tools/list_changed notification.
	changed atomic.Bool
	// starts counts sessions started (the first and every restart).
	starts atomic.Int64
}

func newServer(cfg ServerConfig, log *slog.Logger) *server {
	s := &server{cfg: cfg, log: log}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "mgrpo", Version: "1"}, &sdk.ClientOptions{
		// No roots, sampling or elicitation: the agents only call tools.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.changed.Store(true)
		},
	})
	return s
}

// session returns the live session, starting one when there is none. A
// start that fails sets the backoff; a call during the backoff waits for
// its end instead of failing at once, so a restarting server costs the
// calls that arrive meanwhile time, not an observation — unless the
// backoff outlasts ctx's deadline: then waiting could only end in a
// timeout, and the call fails at once with the last start's error (an
// outage, not a hang).
func (s *server) session(ctx context.Context) (*sdk.ClientSession, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if s.sess != nil {
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		}
		if wait := s.starting; wait != nil {
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-wait:
			}
			continue
		}
		delay := time.Until(s.retryAt)
		if dl, ok := ctx.Deadline(); ok && delay > 0 && s.retryAt.After(dl) {
			err := s.lastErr
			s.mu.Unlock()
			return nil, fmt.Errorf("%w (next start in %v)", err, delay.Round(time.Millisecond))
		}
		s.starting = make(chan struct{})
		s.mu.Unlock()
		err := s.start(ctx, delay)
		s.mu.Lock()
		close(s.starting)
		s.starting = nil
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// start waits delay, then starts a session and installs it; a failure
// doubles the backoff.
func (s *server) start(ctx context.Context, delay time.Duration) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
	defer cancel()
	sess, proc, err := s.connect(sctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.fails++
		s.retryAt = time.Now().Add(min(baseBackoff<<min(s.fails-1, 10), maxBackoff))
		s.lastErr = err
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			// Not the caller's timeout for the calls that will fail with it.
			s.lastErr = fmt.Errorf("mcp server %s: its last start did not finish: %s", s.cfg.Name, s.redact(err.Error()))
		}
		return err
	}
	if s.closed {
		_ = sess.Close()
		if proc != nil {
			proc.stop()
		}
		return ErrClosed
	}
	s.fails, s.retryAt, s.lastErr = 0, time.Time{}, nil
	s.sess, s.proc = sess, proc
	n := s.starts.Add(1)
	if n > 1 {
		s.log.Warn("mcp server restarted", "server", s.cfg.Name, "starts", n)
	}
	// The session's end (the process exited, the HTTP session was lost)
	// clears it, so that the next call starts a new one.
	go func() {
		_ = sess.Wait()
		s.mu.Lock()
		if s.sess == sess {
			s.sess, s.proc = nil, nil
		}
		s.mu.Unlock()
		if proc != nil {
			proc.stop()
		}
	}()
	return nil
}

// connect starts the server (stdio) or opens a session (HTTP) and runs the
// MCP initialization. Errors name the server, its transport and, for a
// stdio server, how it ended and its stderr's last lines.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, *process, error) {
	if s.cfg.URL != "" {
		// The standalone SSE stream carries the server's tools/list_changed
		// notifications; the SDK's own reconnects are off because a lost
		// session is started again here, with backoff.
		t := &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{Transport: headerTransport{s.cfg.Headers}}, MaxRetries: -1}
		sess, err := s.client.Connect(ctx, t, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp server %s: connect to %s: %s", s.cfg.Name, redact.URL(s.cfg.URL), s.redact(err.Error()))
		}
		return sess, nil, nil
	}
	proc, t, err := startProcess(s.cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp server %s: start %s: %w", s.cfg.Name, s.cfg.Command, err)
	}
	sess, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		// Give a dying process a moment to write its last words and exit.
		select {
		case <-proc.done:
		case <-time.After(200 * time.Millisecond):
		}
		desc := proc.describe()
		proc.stop()
		if g := proc.guard.failed(); g != nil {
			err = g // clearer than the SDK's "connection closed"
		}
		return nil, nil, fmt.Errorf("mcp server %s: initialize over stdio (%s): %w; %s", s.cfg.Name, s.cfg.Command, err, desc)
	}
	return sess, proc, nil
}

// redact removes the header values (tokens) from text.
func (s *server) redact(text string) string {
	secrets := make([]string, 0, len(s.cfg.Headers))
	for _, v := range s.cfg.Headers {
		secrets = append(secrets, v)
		if _, tok, ok := strings.Cut(v, " "); ok {
			secrets = append(secrets, tok) // "Bearer TOKEN"
		}
	}
	return redact.Secrets(text, secrets...)
}

// listTools lists every tool of the server, all pages.
func (s *server) listTools(ctx context.Context) ([]*sdk.Tool, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	// Cleared before listing, so that a change announced while the list
	// is read is not lost.
	s.changed.Store(false)
	var out []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: list tools: %w%s", s.cfg.Name, err, s.stderrNote())
		}
		out = append(out, t)
	}
	return out, nil
}

// stderrNote is the current process's stderr tail, for errors.
func (s *server) stderrNote() string {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return ""
	}
	return "; " + p.describe()
}

// drop ends sess if it is still the current session (a call found it
// broken), so that the next call starts a new one.
func (s *server) drop(sess *sdk.ClientSession) {
	s.mu.Lock()
	cur := s.sess == sess
	p := s.proc
	if cur {
		s.sess, s.proc = nil, nil
	}
	s.mu.Unlock()
	if cur {
		_ = sess.Close()
		if p != nil {
			p.stop()
		}
	}
}

// close ends the session and stops the process; later calls fail with
// ErrClosed. It is idempotent.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	sess, p := s.sess, s.proc
	s.sess, s.proc = nil, nil
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
	if p != nil {
		p.stop()
	}
}

// kill ends the current stdio process at once, as a crash would (tests).
func (s *server) kill() bool {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return false
	}
	p.kill()
	return true
}

// headerTransport adds the configured headers to every request.
type headerTransport struct{ headers map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}
