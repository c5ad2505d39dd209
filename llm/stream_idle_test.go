package llm

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// stallingSim is a sim whose every stream stops after its first events and
// then sends nothing until the client leaves.
func stallingSim(t *testing.T, dialect string, seed uint64) *simServer {
	t.Helper()
	cfg := simConfig(dialect, seed)
	cfg.Faults.RateStallStream = 1
	return mustSim(t, cfg, nil)
}

// idleRetry is a retry policy whose attempts could run for 20s but
// whose streams are taken for stalled after 1s of silence: far from both
// the attempt timeout and the gaps a loaded machine puts between a
// healthy stream's events (100ms was seen to time out a healthy stream
// under -race at load 29).
func idleRetry() RetryPolicy {
	rp := fastRetry()
	rp.AttemptTimeout, rp.IdleTimeout = 20*time.Second, time.Second
	return rp
}

// TestStreamIdleTimeoutRetries: a stream that stops mid-generation is ended
// by the idle timeout, long before its attempt timeout, and retried at once
// on the pool's other endpoint, whose answer is the whole turn.
func TestStreamIdleTimeoutRetries(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			req := Request{Messages: userMsg(mustWorld(t).Questions[1].Question), Tools: executorTools(), Sampling: &Sampling{Seed: ptr(int64(8))}}
			ref := mustSim(t, simConfig(dialect, 4), nil)
			rc := mustClient(t, Config{Dialect: dialect, Endpoints: []string{ref.ts.URL}, CaptureTokens: true, Stream: true})
			want, err := rc.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			// The pool tries the stalling endpoint first (equal loads go
			// to the first), then avoids it.
			stall, good := stallingSim(t, dialect, 4), mustSim(t, simConfig(dialect, 4), nil)
			c := mustClient(t, Config{Dialect: dialect, Endpoints: []string{stall.ts.URL, good.ts.URL}, CaptureTokens: true, Stream: true, Retry: idleRetry(), Metrics: NewMetrics()})
			got, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Fatalf("the retry after the stall failed: %v", err)
			}
			// SGLang tokenizes first: one more request.
			wantAttempts := 2
			if dialect == DialectSGLang {
				wantAttempts = 3
			}
			if got.Attempts != wantAttempts || got.Endpoint != good.ts.URL {
				t.Errorf("attempts %d on %s, want %d ending on %s", got.Attempts, got.Endpoint, wantAttempts, good.ts.URL)
			}
			if d := cmp.Diff(comparableTurn(want), comparableTurn(got), cmpopts.IgnoreUnexported(Turn{}), cmpopts.IgnoreFields(Turn{}, "Attempts")); d != "" {
				t.Errorf("turn after the retry differs from the uninterrupted one (-want +got):\n%s", d)
			}
			if n := counterValue(t, c.met.failures.WithLabelValues(c.role, stall.ts.URL, ClassTimeout)); n != 1 {
				t.Errorf("%v timeouts counted for the stalling endpoint, want 1", n)
			}
		})
	}
}

// TestStreamCutKeepsPartialTurn: when every attempt's stream stalls, the
// call fails with ErrIdleTimeout and returns the partial Turn of the last
// attempt: the prompt ids and the tokens and logprobs its events carried,
// marked as cut by the client.
func TestStreamCutKeepsPartialTurn(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			req := Request{Messages: userMsg(mustWorld(t).Questions[2].Question), Tools: executorTools(), Sampling: &Sampling{Seed: ptr(int64(9))}}
			ref := mustSim(t, simConfig(dialect, 6), nil)
			rc := mustClient(t, Config{Dialect: dialect, Endpoints: []string{ref.ts.URL}, CaptureTokens: true, Stream: true})
			full, err := rc.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			s := stallingSim(t, dialect, 6)
			rp := idleRetry()
			rp.MaxAttempts = 2
			c := mustClient(t, Config{Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Stream: true, Retry: rp})
			tr, err := c.Chat(context.Background(), req)
			if !errors.Is(err, ErrIdleTimeout) {
				t.Fatalf("err %v, want ErrIdleTimeout", err)
			}
			if !tr.Partial() || tr.FinishReason != "abort" || tr.Abort.By != AbortedByClient {
				t.Fatalf("turn %+v, want a partial turn cut by the client", tr)
			}
			n := len(tr.CompletionIDs)
			if n == 0 || n >= len(full.CompletionIDs) {
				t.Fatalf("%d completion ids kept of %d: want those sent before the stall", n, len(full.CompletionIDs))
			}
			if !slices.Equal(tr.PromptIDs, full.PromptIDs) || !slices.Equal(tr.CompletionIDs, full.CompletionIDs[:n]) || !slices.Equal(tr.Logprobs, full.Logprobs[:n]) {
				t.Errorf("partial turn is not the start of the generation:\nids  %v\nwant %v", tr.CompletionIDs, full.CompletionIDs[:n])
			}
			if len(tr.ToolCalls) != 0 {
				t.Errorf("a cut turn has tool calls %v", tr.ToolCalls)
			}
		})
	}
}
