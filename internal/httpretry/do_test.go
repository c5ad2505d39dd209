package httpretry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// script returns an attempt function answering the statuses in turn (0:
// a transport error) and counting its calls.
func script(calls *int, codes ...int) func(context.Context) (*http.Response, error) {
	return func(context.Context) (*http.Response, error) {
		c := codes[min(*calls, len(codes)-1)]
		*calls++
		switch c {
		case 0:
			return nil, errors.New("connection reset")
		case 200:
			return answer(200, ""), nil
		}
		r := answer(c, "")
		return r, NewStatusError(c, r.Header, "scripted")
	}
}

func TestDo(t *testing.T) {
	fast := Policy{Retries: 3, WaitMin: time.Millisecond, WaitMax: 2 * time.Millisecond}
	cases := []struct {
		name      string
		p         Policy
		codes     []int
		wantCalls int
		wantCode  int
		exhausted bool
	}{
		{name: "success at once", p: fast, codes: []int{200}, wantCalls: 1},
		{name: "5xx then success", p: fast, codes: []int{503, 500, 200}, wantCalls: 3},
		{name: "transport error then success", p: fast, codes: []int{0, 200}, wantCalls: 2},
		{name: "4xx not retried", p: fast, codes: []int{404, 200}, wantCalls: 1, wantCode: 404},
		{name: "retries run out", p: fast, codes: []int{502}, wantCalls: 4, wantCode: 502, exhausted: true},
		{name: "no retries", p: Policy{}, codes: []int{503}, wantCalls: 1, wantCode: 503, exhausted: true},
		{name: "MaxElapsed bounds unlimited retries", p: Policy{Retries: -1, MaxElapsed: 30 * time.Millisecond, WaitMin: 10 * time.Millisecond, WaitMax: 10 * time.Millisecond},
			codes: []int{500}, wantCalls: 3, wantCode: 500, exhausted: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := c.p.Do(context.Background(), script(&calls, c.codes...))
			if calls != c.wantCalls {
				t.Errorf("attempts = %d, want %d", calls, c.wantCalls)
			}
			if got := Code(err); got != c.wantCode {
				t.Errorf("err = %v, want status %d", err, c.wantCode)
			}
			var ex *ExhaustedError
			if errors.As(err, &ex) != c.exhausted {
				t.Errorf("err = %v, exhausted want %v", err, c.exhausted)
			}
			if c.exhausted && ex.Attempts != c.wantCalls {
				t.Errorf("ExhaustedError.Attempts = %d, want %d", ex.Attempts, c.wantCalls)
			}
		})
	}
}

func TestDoHonoursRetryAfter(t *testing.T) {
	calls := 0
	attempt := func(context.Context) (*http.Response, error) {
		calls++
		if calls == 1 {
			r := answer(429, "1")
			return r, NewStatusError(429, r.Header, "")
		}
		return answer(200, ""), nil
	}
	start := time.Now()
	if err := (Policy{Retries: 2, WaitMin: time.Millisecond}).Do(context.Background(), attempt); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("retried after %v, want ≥ 1s (Retry-After)", el)
	}
}

func TestDoCancelEndsWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	attempt := func(context.Context) (*http.Response, error) {
		calls++
		if calls == 1 {
			cancel()
		}
		r := answer(503, "30")
		return r, NewStatusError(503, r.Header, "")
	}
	start := time.Now()
	err := Policy{Retries: 5, MaxRetryAfter: time.Minute}.Do(ctx, attempt)
	if !errors.Is(err, context.Canceled) || Code(err) != 503 {
		t.Errorf("err = %v, want context.Canceled with the last 503", err)
	}
	if el := time.Since(start); el > 5*time.Second || calls != 1 {
		t.Errorf("cancel ended the wait after %v and %d attempts", el, calls)
	}
}

func TestDoCancelledDuringWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	calls := 0
	start := time.Now()
	err := Policy{Retries: 5, WaitMin: 10 * time.Second}.Do(ctx, script(&calls, 500))
	if !errors.Is(err, context.DeadlineExceeded) || Code(err) != 500 {
		t.Errorf("err = %v, want the deadline with the last 500", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the deadline ended the wait after %v", el)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled ctx = %v, want context.Canceled", err)
	}
}
