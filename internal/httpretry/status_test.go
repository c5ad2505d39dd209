package httpretry

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNewStatusError(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name       string
		code       int
		retryAfter string
		message    string
		wantText   string
		wantAfter  time.Duration
		slack      time.Duration
	}{
		{name: "429 with seconds", code: 429, retryAfter: "7", message: "slow down",
			wantText: "HTTP 429 Too Many Requests: slow down", wantAfter: 7 * time.Second},
		{name: "503 with an HTTP date", code: 503, retryAfter: now.Add(90 * time.Second).UTC().Format(http.TimeFormat),
			wantText: "HTTP 503 Service Unavailable", wantAfter: 90 * time.Second, slack: 2 * time.Second},
		{name: "unparsable Retry-After", code: 500, retryAfter: "soon", message: "down",
			wantText: "HTTP 500 Internal Server Error: down"},
		{name: "secret redacted", code: 401, message: "bad key sk-secret-123",
			wantText: "HTTP 401 Unauthorized: bad key [REDACTED]"},
		{name: "long message shortened", code: 400, message: strings.Repeat("é", MaxMessage+5),
			wantText: "HTTP 400 Bad Request: " + strings.Repeat("é", MaxMessage) + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.retryAfter != "" {
				h.Set("Retry-After", c.retryAfter)
			}
			se := NewStatusError(c.code, h, c.message, "sk-secret-123")
			if got := se.Error(); got != c.wantText {
				t.Errorf("Error() = %q, want %q", got, c.wantText)
			}
			if d := se.RetryAfter - c.wantAfter; d < -c.slack || d > c.slack {
				t.Errorf("RetryAfter = %v, want %v ± %v", se.RetryAfter, c.wantAfter, c.slack)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	cases := []struct {
		code int
		want bool
	}{
		{200, false}, {400, false}, {401, false}, {404, false}, {409, false},
		{408, true}, {429, true}, {500, true}, {501, false}, {502, true}, {503, true}, {504, true},
	}
	for _, c := range cases {
		if got := Retryable(c.code); got != c.want {
			t.Errorf("Retryable(%d) = %v, want %v", c.code, got, c.want)
		}
		if got := (&StatusError{Code: c.code}).Retryable(); got != c.want {
			t.Errorf("StatusError{%d}.Retryable() = %v, want %v", c.code, got, c.want)
		}
	}
}

func TestCode(t *testing.T) {
	wrapped := fmt.Errorf("POST /v1/start: %w", &StatusError{Code: 409})
	if got := Code(wrapped); got != 409 {
		t.Errorf("Code(wrapped 409) = %d, want 409", got)
	}
	if got := Code(errors.New("connection refused")); got != 0 {
		t.Errorf("Code(plain error) = %d, want 0", got)
	}
}
