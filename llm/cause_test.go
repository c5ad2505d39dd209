package llm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// TestCause checks the failure cause of each kind of error a call returns.
func TestCause(t *testing.T) {
	ep := "http://gpu-1:8000"
	giveUp := func(err error) error { return &GiveUpError{Endpoint: ep, Attempts: 6, Err: err} }
	cases := []struct {
		name  string
		err   error
		cause failure.Cause
	}{
		{"refused", giveUp(errors.New("dial tcp 127.0.0.1:1: connect: connection refused")), failure.CauseEngineUnreachable},
		{"500", giveUp(fmt.Errorf("%s: %w", ep, httpretry.NewStatusError(500, nil, "boom"))), failure.CauseEngine5xx},
		{"429", giveUp(httpretry.NewStatusError(429, nil, "slow down")), failure.CauseEngine429},
		{"404 model", giveUp(httpretry.NewStatusError(404, nil, "The model `x` does not exist.")), failure.CauseEngine4xx},
		{"context length", giveUp(httpretry.NewStatusError(400, nil, "This model's maximum context length is 8 tokens.")), failure.CauseContextLength},
		{"attempt timeout", giveUp(fmt.Errorf("%s: %w after 1s", ep, ErrAttemptTimeout)), failure.CauseEngineTimeout},
		{"idle", giveUp(fmt.Errorf("%s: %w", ep, ErrIdleTimeout)), failure.CauseEngineTimeout},
		{"call deadline", giveUp(fmt.Errorf("%w (last error: x)", context.DeadlineExceeded)), failure.CauseInterrupted},
		{"stream cut", giveUp(&DecodeError{Endpoint: ep, Err: ErrStreamEnded}), failure.CauseStreamCut},
		{"malformed", giveUp(&DecodeError{Endpoint: ep, Err: ErrMalformedResponse}), failure.CauseStreamCut},
		{"abort", giveUp(&DecodeError{Endpoint: ep, Err: ErrAborted}), failure.CauseServerAbort},
		{"other", errors.New("llm role planner: chat: no messages"), failure.CauseOther},
	}
	for _, c := range cases {
		got, endpoint := Cause(c.err)
		if got != c.cause {
			t.Errorf("%s: cause %q, want %q", c.name, got, c.cause)
		}
		if c.cause != failure.CauseOther && endpoint != ep {
			t.Errorf("%s: endpoint %q, want %q", c.name, endpoint, ep)
		}
	}
}
