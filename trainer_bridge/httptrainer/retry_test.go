package httptrainer

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"86400", MaxRetryAfter, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
	}
	for _, tc := range tests {
		got, ok := retryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDefaultCheckRetry(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		status int
		err    error
		want   bool
	}{
		{"connection refused", ctx, 0, errors.New("dial tcp: connection refused"), true},
		{"500", ctx, 500, nil, true},
		{"503", ctx, 503, nil, true},
		{"501", ctx, 501, nil, false},
		{"429", ctx, 429, nil, true},
		{"408", ctx, 408, nil, true},
		{"400", ctx, 400, nil, false},
		{"404", ctx, 404, nil, false},
		{"200", ctx, 200, nil, false},
		{"cancelled", done, 503, nil, false},
	}
	for _, tc := range tests {
		var resp *http.Response
		if tc.err == nil {
			resp = &http.Response{StatusCode: tc.status}
		}
		got, _ := DefaultCheckRetry(tc.ctx, resp, tc.err)
		if got != tc.want {
			t.Errorf("%s: retry %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDefaultBackoffGrowsToItsCap(t *testing.T) {
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		got := DefaultBackoff(100*time.Millisecond, time.Second, attempt, nil)
		if w := want * time.Millisecond; got < w || got > w+w/4 {
			t.Errorf("attempt %d: %v, want in [%v, %v]", attempt, got, w, w+w/4)
		}
	}
}
