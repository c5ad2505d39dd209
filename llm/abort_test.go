package llm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// abortSim is a sim server whose running requests a test can abort the way
// the dialect's trainer does during a weight update.
type abortSim struct {
	*simServer
	dialect string
}

// waitRunning polls the sim's /metrics until n requests are running.
func (s abortSim) waitRunning(t *testing.T, n int) {
	t.Helper()
	gauge := "vllm:num_requests_running"
	if s.dialect == DialectSGLang {
		gauge = "sglang:num_running_reqs"
	}
	want := gauge + `{model_name="` + simllm.DefaultModel + `"} ` + strconv.Itoa(n) + ".0"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the sim's /metrics within 30s:\n%s", want, body)
		}
		time.Sleep(time.Millisecond)
	}
}

// abort ends the running requests: vLLM's POST /pause?mode=abort (the
// engine stays paused until resume), SGLang's weight update with
// abort_all_requests.
func (s abortSim) abort(t *testing.T) {
	t.Helper()
	path, body := "/pause?mode=abort", ""
	if s.dialect == DialectSGLang {
		path, body = "/update_weights_from_disk", `{"model_path": "/ckpt/step-2", "abort_all_requests": true}`
	}
	resp, err := http.Post(s.ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d", path, resp.StatusCode)
	}
}

// resume lets a paused vLLM engine admit requests again.
func (s abortSim) resume(t *testing.T) {
	t.Helper()
	if s.dialect != DialectVLLM {
		return
	}
	resp, err := http.Post(s.ts.URL+"/resume", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// abortCases are the dialect routes a generation can be aborted on; calls
// is the number of requests of one attempt at a call (the native route
// tokenizes first).
var abortCases = []struct {
	name, dialect string
	native        bool // SGLang's /v1/tokenize + /generate
	calls         int
}{
	{"vllm", DialectVLLM, false, 1},
	{"sglang chat", DialectSGLang, false, 1},
	{"sglang generate", DialectSGLang, true, 2},
}

// TestAbortMidGenerationKeepsPartialTurn aborts a generation while it
// runs (the sim decodes one token per 500 ms): the call, allowed one
// attempt, returns with its error a partial Turn holding exactly the
// prompt ids and the first completion ids and logprobs of the generation
// the same request gets uninterrupted, with finish reason "abort", and the
// turn still forms a training sequence.
func TestAbortMidGenerationKeepsPartialTurn(t *testing.T) {
	for _, tc := range abortCases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Messages: userMsg(mustWorld(t).Questions[0].Question), Tools: executorTools(), Sampling: &Sampling{Seed: ptr(int64(4))}}
			// The uninterrupted generation, from a sim without latency:
			// latency never changes a seeded output.
			ref := mustSim(t, simConfig(tc.dialect, 3), nil)
			rc := mustClient(t, Config{Dialect: tc.dialect, Endpoints: []string{ref.ts.URL}, CaptureTokens: true})
			full, err := rc.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(full.CompletionIDs) < 4 {
				t.Fatalf("the uninterrupted generation has %d tokens; too few to abort in the middle", len(full.CompletionIDs))
			}
			cfg := simConfig(tc.dialect, 3)
			cfg.PerToken = 500 * time.Millisecond
			s := abortSim{mustSim(t, cfg, nil), tc.dialect}
			rp := fastRetry()
			rp.MaxAttempts = 1
			c := mustClient(t, Config{Dialect: tc.dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Retry: rp})
			if tc.native {
				c.dialect.(*sglangDialect).mode.Store(sglangNative)
			}
			type result struct {
				turn *Turn
				err  error
			}
			done := make(chan result, 1)
			go func() {
				tr, err := c.Chat(context.Background(), req)
				done <- result{tr, err}
			}()
			s.waitRunning(t, 1)
			s.abort(t)
			defer s.resume(t)
			res := <-done
			tr := res.turn
			if !errors.Is(res.err, ErrAborted) {
				t.Fatalf("err %v, want the abort", res.err)
			}
			if !tr.Partial() || tr.FinishReason != "abort" || tr.Abort.By != AbortedByServer {
				t.Fatalf("turn %+v, want a partial turn with finish reason abort, aborted by the server", tr)
			}
			if tc.dialect == DialectSGLang && tr.Abort.Reason != "Aborted" {
				t.Errorf("abort reason %q, want SGLang's message", tr.Abort.Reason)
			}
			n := len(tr.CompletionIDs)
			if n == 0 || n >= len(full.CompletionIDs) {
				t.Fatalf("%d completion ids kept of %d: want the part generated before the abort", n, len(full.CompletionIDs))
			}
			if !slices.Equal(tr.PromptIDs, full.PromptIDs) || !slices.Equal(tr.CompletionIDs, full.CompletionIDs[:n]) || !slices.Equal(tr.Logprobs, full.Logprobs[:n]) {
				t.Errorf("partial turn is not the start of the generation:\nprompt %v\nwant   %v\nids  %v\nwant %v\nlogprobs %v\nwant     %v",
					tr.PromptIDs, full.PromptIDs, tr.CompletionIDs, full.CompletionIDs[:n], tr.Logprobs, full.Logprobs[:n])
			}
			if len(tr.ToolCalls) != 0 || tr.Attempts != tc.calls || tr.Endpoint != s.ts.URL {
				t.Errorf("tool calls %v, attempts %d, endpoint %q", tr.ToolCalls, tr.Attempts, tr.Endpoint)
			}
			seqs, _, err := Sequences([]*Turn{tr})
			if err != nil || len(seqs) != 1 || len(seqs[0].InputIDs) != len(tr.PromptIDs)+n {
				t.Errorf("sequences of the partial turn: %v, %v", seqs, err)
			}
		})
	}
}

// TestAbortRetriedAfterWeightUpdate: an abort is not the end of a call
// allowed more attempts. The retry waits for the engine (vLLM stays paused
// until resumed) and returns the whole generation, not a partial one.
func TestAbortRetriedAfterWeightUpdate(t *testing.T) {
	for _, tc := range abortCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simConfig(tc.dialect, 3)
			// The abort comes while the first token is being computed.
			cfg.TTFT = 2 * time.Second
			s := abortSim{mustSim(t, cfg, nil), tc.dialect}
			c := mustClient(t, Config{Dialect: tc.dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
			if tc.native {
				c.dialect.(*sglangDialect).mode.Store(sglangNative)
			}
			done := make(chan error, 1)
			var tr *Turn
			go func() {
				var err error
				tr, err = c.Chat(context.Background(), Request{Messages: userMsg("What is the capital of Bretoria?"), Sampling: &Sampling{Seed: ptr(int64(1))}})
				done <- err
			}()
			s.waitRunning(t, 1)
			s.abort(t)
			s.resume(t)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if tr.Partial() || tr.FinishReason == "abort" || tr.Attempts != tc.calls+1 {
				t.Errorf("turn: partial %v, finish %q, %d requests; want the whole generation from a second attempt (%d requests)", tr.Partial(), tr.FinishReason, tr.Attempts, tc.calls+1)
			}
		})
	}
}
