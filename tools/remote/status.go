// Package remote holds what every outbound call of the tools shares: the
// typed HTTP status error, the failure classes reported to the model and to
// metrics, Retry-After parsing, the per-provider Gate (rate limit,
// concurrency cap, 429 back-off) and the HTTP client built from resty over
// a retryablehttp transport.
package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/mgrpo/mgrpo/tools/ssrf"
)

// StatusError is a non-2xx answer of a remote service.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Message is the service's own error text, shortened and redacted.
	Message string
	// RetryAfter is the wait the service asked for (0 when none).
	RetryAfter time.Duration
}

// Error implements error.
func (e *StatusError) Error() string {
	s := fmt.Sprintf("http %d %s", e.Code, http.StatusText(e.Code))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Class is the kind of failure of a tool call, short and stable, used in
// observation metadata and as a metric label. The empty Class means success.
type Class string

// The failure classes.
const (
	ClassOK          Class = ""
	ClassInvalidArgs Class = "invalid_args"
	ClassRefused     Class = "refused"
	ClassTimeout     Class = "timeout"
	ClassCanceled    Class = "canceled"
	ClassRateLimited Class = "rate_limited"
	ClassAuth        Class = "auth"
	ClassClient      Class = "http_4xx"
	ClassServer      Class = "http_5xx"
	ClassNetwork     Class = "network"
	ClassDecode      Class = "decode"
	ClassUnsupported Class = "unsupported"
	ClassConfig      Class = "config"
	ClassInternal    Class = "internal"
)

// Sentinel errors that map to classes.
var (
	// ErrUnsupported marks a content type or feature the tool cannot serve.
	ErrUnsupported = errors.New("unsupported")
	// ErrDecode marks a response body that did not decode.
	ErrDecode = errors.New("decode response")
	// ErrConfig marks a provider or tool that is not configured (e.g. a
	// missing API key).
	ErrConfig = errors.New("not configured")
)

// Classify maps err to its Class.
func Classify(err error) Class {
	if err == nil {
		return ClassOK
	}
	var se *StatusError
	switch {
	case errors.Is(err, ssrf.ErrRefused), errors.Is(err, ssrf.ErrTooManyRedirects):
		return ClassRefused
	case errors.Is(err, context.Canceled):
		return ClassCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, ErrUnsupported):
		return ClassUnsupported
	case errors.Is(err, ErrDecode):
		return ClassDecode
	case errors.Is(err, ErrConfig):
		return ClassConfig
	case errors.As(err, &se):
		switch {
		case se.Code == http.StatusTooManyRequests:
			return ClassRateLimited
		case se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden:
			return ClassAuth
		case se.Code >= 500:
			return ClassServer
		default:
			return ClassClient
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ClassTimeout
	}
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &oe) {
		return ClassNetwork
	}
	return ClassInternal
}
