package httpretry

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func answer(code int, retryAfter string) *http.Response {
	r := &http.Response{StatusCode: code, Header: http.Header{}}
	if retryAfter != "" {
		r.Header.Set("Retry-After", retryAfter)
	}
	return r
}

func TestExponential(t *testing.T) {
	min, max := 100*time.Millisecond, time.Second
	cases := []struct {
		name   string
		p      Policy
		retry  int
		resp   *http.Response
		lo, hi time.Duration
	}{
		{name: "first retry", retry: 0, lo: min, hi: min},
		{name: "doubles", retry: 2, lo: 400 * time.Millisecond, hi: 400 * time.Millisecond},
		{name: "capped at max", retry: 10, lo: max, hi: max},
		{name: "5xx without Retry-After", retry: 1, resp: answer(503, ""), lo: 200 * time.Millisecond, hi: 200 * time.Millisecond},
		{name: "429 Retry-After seconds", retry: 0, resp: answer(429, "3"), lo: 3 * time.Second, hi: 3 * time.Second},
		{name: "429 Retry-After HTTP date", retry: 0, resp: answer(429, time.Now().Add(20*time.Second).UTC().Format(http.TimeFormat)),
			lo: 18 * time.Second, hi: 20 * time.Second},
		{name: "Retry-After capped", p: Policy{MaxRetryAfter: 5 * time.Second}, resp: answer(429, "86400"), lo: 5 * time.Second, hi: 5 * time.Second},
		{name: "Retry-After default cap", resp: answer(503, "86400"), lo: DefaultMaxRetryAfter, hi: DefaultMaxRetryAfter},
		{name: "Retry-After 0", retry: 3, resp: answer(429, "0"), lo: 0, hi: 0},
		{name: "jitter below", p: Policy{Jitter: Jitter{Below: 0.5}}, retry: 2, lo: 200 * time.Millisecond, hi: 400 * time.Millisecond},
		{name: "jitter above", p: Policy{Jitter: Jitter{Above: 0.25}}, retry: 2, lo: 400 * time.Millisecond, hi: 500 * time.Millisecond},
		{name: "jitter above the cap", p: Policy{Jitter: Jitter{Above: 0.25}}, retry: 9, lo: max, hi: max + max/4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 50 {
				got := c.p.Exponential(min, max, c.retry, c.resp)
				if got < c.lo || got > c.hi {
					t.Fatalf("Exponential = %v, want in [%v, %v]", got, c.lo, c.hi)
				}
			}
		})
	}
}

func TestPolicyWaitDefaults(t *testing.T) {
	if got := (Policy{}).Wait(0, nil); got != DefaultWaitMin {
		t.Errorf("zero Policy first wait = %v, want %v", got, DefaultWaitMin)
	}
	if got := (Policy{}).Wait(30, nil); got != DefaultWaitMax {
		t.Errorf("zero Policy late wait = %v, want %v", got, DefaultWaitMax)
	}
	fixed := Policy{Backoff: func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Millisecond }}
	if got := fixed.Wait(5, nil); got != time.Millisecond {
		t.Errorf("own Backoff wait = %v, want 1ms", got)
	}
}

func TestDefaultCheckRetry(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		resp    *http.Response
		err     error
		want    bool
		wantErr error
	}{
		{name: "connection refused", ctx: ctx, err: errors.New("dial tcp: connection refused"), want: true},
		{name: "429", ctx: ctx, resp: answer(429, "1"), want: true},
		{name: "408", ctx: ctx, resp: answer(408, ""), want: true},
		{name: "500", ctx: ctx, resp: answer(500, ""), want: true},
		{name: "503", ctx: ctx, resp: answer(503, ""), want: true},
		{name: "501", ctx: ctx, resp: answer(501, ""), want: false},
		{name: "400 not retried", ctx: ctx, resp: answer(400, ""), want: false},
		{name: "404 not retried", ctx: ctx, resp: answer(404, ""), want: false},
		{name: "200", ctx: ctx, resp: answer(200, ""), want: false},
		{name: "no answer, no error", ctx: ctx, want: false},
		{name: "StatusError 503", ctx: ctx, resp: answer(503, ""), err: fmt.Errorf("x: %w", &StatusError{Code: 503}), want: true},
		{name: "StatusError 403", ctx: ctx, resp: answer(403, ""), err: &StatusError{Code: 403}, want: false},
		{name: "unknown authority", ctx: ctx, err: &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, want: false},
		{name: "invalid certificate", ctx: ctx, err: x509.CertificateInvalidError{}, want: false},
		{name: "unparsable URL", ctx: ctx, err: &url.Error{Op: "parse", URL: "::", Err: errors.New("missing scheme")}, want: false},
		{name: "cancelled", ctx: done, resp: answer(503, ""), want: false, wantErr: context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DefaultCheckRetry(c.ctx, c.resp, c.err)
			if got != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Errorf("DefaultCheckRetry = %v, %v; want %v, %v", got, err, c.want, c.wantErr)
			}
		})
	}
}
