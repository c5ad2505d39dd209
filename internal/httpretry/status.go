// Package httpretry is the project's one HTTP status error and its one
// retry policy: StatusError for an answer with an unwanted status, Policy
// (go-retryablehttp's CheckRetry and Backoff function types, Retry-After
// honoured and capped) and Do, the retry loop of the clients that do not
// send through go-retryablehttp. The LLM client, the tools' remote client,
// the trainer backends and weight sync use it; the sim, the independent
// side of the wire, does not.
package httpretry

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/internal/retryafter"
)

// MaxMessage is how many characters of a service's message a StatusError
// keeps; a longer one is cut and ends with "…".
const MaxMessage = 300

// StatusError is an HTTP answer with a status the caller did not want.
// Callers wrap it with what they sent ("POST /v1/start: %w"), so its text
// holds only what the answer said.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Message is the service's own error text, shortened to MaxMessage
	// characters and stripped of secrets ("" when the body held none).
	Message string
	// RetryAfter is the wait the answer's Retry-After asked for (0 when
	// it had none).
	RetryAfter time.Duration
}

// NewStatusError returns the StatusError of an answer with status code,
// header h (nil: none) and the message the caller extracted from its body,
// shortened to MaxMessage characters with every secret replaced by
// redact.Marker.
func NewStatusError(code int, h http.Header, message string, secrets ...string) *StatusError {
	se := &StatusError{Code: code, Message: redact.Secrets(Shorten(message, MaxMessage), secrets...)}
	if h != nil {
		if d, ok := retryafter.Parse(h.Get("Retry-After"), time.Now()); ok {
			se.RetryAfter = d
		}
	}
	return se
}

// Error returns "HTTP 503 Service Unavailable", followed by ": " and the
// message when there is one.
func (e *StatusError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether another attempt may get a better answer (see
// Retryable).
func (e *StatusError) Retryable() bool { return Retryable(e.Code) }

// Retryable reports whether an answer with status code is worth another
// attempt: 408 (the server timed the request out), 429 and every 5xx but
// 501 (the server does not implement the request, which does not change).
func Retryable(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true
	case code >= 500 && code != http.StatusNotImplemented:
		return true
	}
	return false
}

// Code returns the status code of the *StatusError in err's chain, or 0
// when there is none.
func Code(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// Shorten returns s cut to n characters (runes), with "…" appended when it
// was longer.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
