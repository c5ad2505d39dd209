// Package httpserve builds the project's HTTP servers with bounded
// timeouts and request bodies, so that a client that sends slowly, or not
// at all, cannot hold a connection (and its goroutine) open for good.
package httpserve

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// Limits are an HTTP server's timeouts and its request body cap.
//
// There is no whole-request read timeout (http.Server.ReadTimeout): net/http
// keeps that deadline on the connection while the handler runs, and when it
// passes, the read that watches for the client leaving fails and cancels the
// request's context, which would cut a streamed generation or a long poll
// that legitimately outlives it. BodyTimeout bounds the body alone instead:
// a per-request read deadline (http.ResponseController) lifted once the
// body has been read to its end.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, counted from the start
	// of its handler; zero leaves it unbounded.
	BodyTimeout time.Duration
	// WriteTimeout bounds writing the response, counted from the end of the
	// request's headers. Set it only on servers whose every answer is short:
	// zero leaves streams and long polls uncut.
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection.
	IdleTimeout time.Duration
	// MaxBodyBytes caps request bodies (http.MaxBytesReader: reading past it
	// fails, and the connection is closed after the answer); zero leaves the
	// cap to the handler.
	MaxBodyBytes int64
}

// Defaults for the project's servers.
const (
	// DefaultReadHeaderTimeout is every server's ReadHeaderTimeout.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout is every server's BodyTimeout: a 64 MiB body at
	// ~1 MB/s, far slower than loopback or a LAN.
	DefaultBodyTimeout = time.Minute
	// DefaultIdleTimeout is every server's IdleTimeout.
	DefaultIdleTimeout = 2 * time.Minute
)

// Streaming returns the limits of a server whose answers may stream or be
// held for long (the sim's inference server streams generations and stalls
// on purpose; the sim trainer long-polls futures): no write timeout, and the
// handlers cap their own bodies.
func Streaming() Limits {
	return Limits{ReadHeaderTimeout: DefaultReadHeaderTimeout, BodyTimeout: DefaultBodyTimeout, IdleTimeout: DefaultIdleTimeout}
}

// Short returns the limits of a server whose answers are short pages
// (mgrpo view, /metrics): a minute to write one, and 1 MiB bodies (their
// routes take none).
func Short() Limits {
	return Limits{ReadHeaderTimeout: DefaultReadHeaderTimeout, BodyTimeout: DefaultBodyTimeout,
		WriteTimeout: time.Minute, IdleTimeout: DefaultIdleTimeout, MaxBodyBytes: 1 << 20}
}

// Server returns an http.Server serving h within l.
func (l Limits) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           l.Handler(h),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
}

// Handler wraps h with l's body cap and body timeout (the server's
// timeouts are Server's).
func (l Limits) Handler(h http.Handler) http.Handler {
	if l.MaxBodyBytes <= 0 && l.BodyTimeout <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		if l.MaxBodyBytes > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, l.MaxBodyBytes)
		}
		if l.BodyTimeout > 0 {
			rc := http.NewResponseController(w)
			// A writer that cannot take deadlines (a test recorder) serves
			// the body unbounded.
			if rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its request's read deadline once the body is read to
// its end, so the rest of the request (a stream, a long poll) is not cut.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
