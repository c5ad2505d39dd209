package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/tools/ssrf"
)

// ClientConfig configures NewClient.
type ClientConfig struct {
	// Transport carries the requests; nil means a fresh
	// http.DefaultTransport clone. Model-steered fetches pass the SSRF
	// guard's transport here.
	Transport http.RoundTripper
	// Timeout bounds one whole request including retries; 0 means 30s.
	Timeout time.Duration
	// Retries is how many times a connection error, 408 or 5xx (but 501)
	// is retried (httpretry.DefaultCheckRetry); 0 means none.
	Retries int
	// RetryWaitMin and RetryWaitMax bound the back-off between retries;
	// 0 means 100ms and 2s.
	RetryWaitMin, RetryWaitMax time.Duration
	// Retry429 lets the transport retry 429 answers itself, honouring
	// Retry-After. Providers leave it off: their Gate pauses every caller.
	Retry429 bool
	// CheckRedirect is the redirect policy; nil means Go's default.
	CheckRedirect func(*http.Request, []*http.Request) error
	// UserAgent is sent with every request.
	UserAgent string
}

// NewClient returns a resty client whose transport is a retryablehttp
// client with httpretry's policy: connection errors, 408 and 5xx answers
// are retried with back-off (honouring Retry-After), SSRF
// refusals and redirect-cap hits never are, and the last answer is handed
// back as is (no "giving up" error hides its status).
func NewClient(cfg ClientConfig) *resty.Client {
	tr := cfg.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// A farm sends hundreds of concurrent requests to one API host;
		// with the default of 2 idle connections per host, nearly every
		// request would open (and TLS-handshake) a new one.
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 256
		tr = t
	}
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.HTTPClient = &http.Client{Transport: tr, CheckRedirect: cfg.CheckRedirect}
	waitMax := cfg.RetryWaitMax
	if waitMax <= 0 {
		waitMax = 2 * time.Second
	}
	httpretry.Policy{
		Retries:    max(cfg.Retries, 0),
		WaitMin:    cfg.RetryWaitMin, // 0: httpretry.DefaultWaitMin, 100ms
		WaitMax:    waitMax,
		CheckRetry: retryPolicy(cfg.Retry429),
	}.Configure(rc)
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	c := resty.NewWithClient(&http.Client{
		Transport:     exclusive{&retryablehttp.RoundTripper{Client: rc}},
		CheckRedirect: cfg.CheckRedirect,
		Timeout:       timeout,
	})
	c.SetLogger(discardLogger{})
	if cfg.UserAgent != "" {
		c.SetHeader("User-Agent", cfg.UserAgent)
	}
	return c
}

// retryPolicy is httpretry's default policy, minus SSRF refusals and,
// unless retry429, minus 429 answers.
func retryPolicy(retry429 bool) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if err != nil && (errors.Is(err, ssrf.ErrRefused) || errors.Is(err, ssrf.ErrTooManyRedirects)) {
			return false, nil
		}
		if err == nil && resp != nil && resp.StatusCode == http.StatusTooManyRequests && !retry429 {
			return false, nil
		}
		return httpretry.DefaultCheckRetry(ctx, resp, err)
	}
}

// Response is a fully read answer.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the answer's headers.
	Header http.Header
	// Body holds at most the byte cap of the body.
	Body []byte
	// Truncated is true when the body was longer than the cap.
	Truncated bool
	// URL is the final URL after redirects.
	URL string
}

// Execute sends r (built with SetDoNotParseResponse(true) set here) and
// reads at most maxBytes of the body. Transport failures are returned as
// errors; every HTTP status, 4xx and 5xx included, is returned as a
// Response for the caller to interpret.
func Execute(r *resty.Request, method, url string, maxBytes int64) (*Response, error) {
	r.SetDoNotParseResponse(true)
	resp, err := r.Execute(method, url)
	if err != nil {
		return nil, err
	}
	raw := resp.RawBody()
	if raw == nil {
		return &Response{Status: resp.StatusCode(), Header: resp.Header()}, nil
	}
	defer raw.Close()
	body, err := io.ReadAll(io.LimitReader(raw, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	out := &Response{Status: resp.StatusCode(), Header: resp.Header(), Body: body}
	if int64(len(body)) > maxBytes {
		out.Body = body[:maxBytes]
		out.Truncated = true
	}
	if resp.RawResponse != nil && resp.RawResponse.Request != nil {
		out.URL = resp.RawResponse.Request.URL.String()
	}
	return out, nil
}

// StatusErrorFrom builds the *httpretry.StatusError for a non-2xx
// Response, with the message chosen by the caller (already extracted from
// the body) shortened and stripped of secrets, and the answer's
// Retry-After.
func StatusErrorFrom(r *Response, message string, secrets ...string) *httpretry.StatusError {
	return httpretry.NewStatusError(r.Status, r.Header, message, secrets...)
}

type discardLogger struct{}

func (discardLogger) Errorf(string, ...any) {}
func (discardLogger) Warnf(string, ...any)  {}
func (discardLogger) Debugf(string, ...any) {}

// exclusive makes a RoundTripper return a response or an error, never both:
// with the passthrough error handler retryablehttp can hand back both (a
// redirect refused mid-chain), which net/http would log and discard.
type exclusive struct{ rt http.RoundTripper }

func (e exclusive) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := e.rt.RoundTrip(req)
	if err != nil && resp != nil {
		if resp.Body != nil {
			resp.Body.Close()
		}
		return nil, err
	}
	return resp, err
}
