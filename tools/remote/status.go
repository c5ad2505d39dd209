// Package remote holds what every outbound call of the tools shares: the
// classification of errors into the failure classes of package
// internal/failure (reported to the model and to metrics; status errors are
// the project's *httpretry.StatusError), the per-provider Gate (rate
// limit, concurrency cap, 429 back-off) and the HTTP client built from
// resty over a retryablehttp transport with httpretry's policy.
package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/tools/ssrf"
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

// Classify maps err to its failure class: a *httpretry.StatusError by its code
// (429 rate_limited, 401 and 403 auth, 5xx http_5xx, other http_4xx).
func Classify(err error) failure.Class {
	if err == nil {
		return failure.ClassOK
	}
	var se *httpretry.StatusError
	switch {
	case errors.Is(err, ssrf.ErrRefused), errors.Is(err, ssrf.ErrTooManyRedirects):
		return failure.ClassRefused
	case errors.Is(err, context.Canceled):
		return failure.ClassCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return failure.ClassTimeout
	case errors.Is(err, ErrUnsupported):
		return failure.ClassUnsupported
	case errors.Is(err, ErrDecode):
		return failure.ClassDecode
	case errors.Is(err, ErrConfig):
		return failure.ClassConfig
	case errors.As(err, &se):
		switch {
		case se.Code == http.StatusTooManyRequests:
			return failure.ClassRateLimited
		case se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden:
			return failure.ClassAuth
		case se.Code >= 500:
			return failure.ClassServer
		default:
			return failure.ClassClient
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return failure.ClassTimeout
	}
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &oe) {
		return failure.ClassNetwork
	}
	return failure.ClassInternal
}
