// Package remote holds what every outbound call of the tools shares: the
// failure classes reported to the model and to metrics (status errors are
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

	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/tools/ssrf"
)

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

// Classify maps err to its Class: a *httpretry.StatusError by its code
// (429 rate_limited, 401 and 403 auth, 5xx http_5xx, other http_4xx).
func Classify(err error) Class {
	if err == nil {
		return ClassOK
	}
	var se *httpretry.StatusError
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
