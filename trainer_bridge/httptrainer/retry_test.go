package httptrainer

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestDefaultBackoffRetryAfter(t *testing.T) {
	now := time.Now().UTC()
	tests := []struct {
		v      string
		lo, hi time.Duration
	}{
		{"3", 3 * time.Second, 3 * time.Second},
		{"0", 0, 0},
		{"86400", MaxRetryAfter, MaxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 88 * time.Second, 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, 0},
		// Not a Retry-After: the exponential wait of retry 0.
		{"-1", 100 * time.Millisecond, 125 * time.Millisecond},
		{"soon", 100 * time.Millisecond, 125 * time.Millisecond},
	}
	for _, tc := range tests {
		resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {tc.v}}}
		got := DefaultBackoff(100*time.Millisecond, time.Second, 0, resp)
		if got < tc.lo || got > tc.hi {
			t.Errorf("Retry-After %q: wait %v, want in [%v, %v]", tc.v, got, tc.lo, tc.hi)
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
		got, _ := Config{}.policy().WithDefaults().CheckRetry(tc.ctx, resp, tc.err)
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
