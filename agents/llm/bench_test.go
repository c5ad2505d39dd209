package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// cannedVLLM returns a vLLM answer with prompt ids for a history of
// historyBytes (about 4 bytes a token) and a 200-token completion.
func cannedVLLM(historyBytes int) []byte {
	prompt := make([]int, historyBytes/4)
	for i := range prompt {
		prompt[i] = 1000 + i%50000
	}
	const n = 200
	ids := make([]int, n)
	lps := make([]map[string]any, n)
	for i := range ids {
		ids[i] = 2000 + i
		lps[i] = map[string]any{"token": "tok", "logprob": -0.25, "bytes": []int{116, 111, 107}, "top_logprobs": []any{}}
	}
	b, _ := json.Marshal(map[string]any{
		"id": "x", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": strings.Repeat("tok", n)},
			"logprobs": map[string]any{"content": lps}, "finish_reason": "stop", "stop_reason": nil, "token_ids": ids}},
		"usage":            map[string]any{"prompt_tokens": len(prompt), "completion_tokens": n, "total_tokens": len(prompt) + n},
		"prompt_token_ids": prompt,
	})
	return b
}

// BenchmarkChat measures the client's CPU and allocations per call for a
// history of each size against a server that answers a canned body (the
// server's share is a single Write).
func BenchmarkChat(b *testing.B) {
	for _, size := range []int{1 << 10, 8 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("history=%dKB", size>>10), func(b *testing.B) {
			body := cannedVLLM(size)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			defer ts.Close()
			c := mustClient(b, Config{Dialect: DialectVLLM, Endpoints: []string{ts.URL}, CaptureTokens: true})
			c.dialect.(*vllmDialect).mode.Store(vllmModern)
			var msgs []openai.ChatCompletionMessage
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "system", Content: "sys"})
			for used := 0; used < size; used += 512 {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: strings.Repeat("w", 480)})
			}
			req := Request{Messages: msgs, Tools: executorTools(), TrajectoryKey: "k"}
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.Chat(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConcurrent10k fires 10,000 concurrent calls at the sim with a
// 1 s time to first token and enough slots for all of them, and reports
// calls per second against the ideal of 10,000 per second.
func BenchmarkConcurrent10k(b *testing.B) {
	if testing.Short() {
		b.Skip("heavy: 10,000 concurrent connections")
	}
	const n = 10000
	cfg := simConfig(DialectVLLM, 1)
	cfg.Slots = 2 * n
	cfg.TTFT = time.Second
	// 10,000 HTTP/1.1 connections need 20,000 descriptors in one process
	// (client and server ends), past the limit of the machines this runs
	// on; unencrypted HTTP/2 multiplexes the calls over a few connections.
	sim, err := simllm.NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(sim.Handler())
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	ts.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
	ts.Start()
	defer func() { sim.Close(); ts.Close() }()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	c := mustClient(b, Config{Dialect: DialectVLLM, Endpoints: []string{ts.URL}, CaptureTokens: true, HTTPClient: &http.Client{Transport: tr},
		Pool: PoolConfig{MaxInFlightPerEndpoint: 2 * n}, Retry: RetryPolicy{MaxAttempts: 3, CallTimeout: time.Minute}})
	c.dialect.(*vllmDialect).mode.Store(vllmModern)
	req := Request{Messages: userMsg("What is the capital of the country where the Orlen group was founded?"), Sampling: &Sampling{MaxTokens: 16}}
	var total time.Duration
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := time.Now()
		for range n {
			wg.Go(func() {
				if _, err := c.Chat(context.Background(), req); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		total += time.Since(start)
		close(errs)
		if err, ok := <-errs; ok {
			b.Fatalf("%d calls failed, first: %v", len(errs)+1, err)
		}
	}
	perRun := total / time.Duration(b.N)
	rate := float64(n) / perRun.Seconds()
	b.ReportMetric(rate, "calls/s")
	b.ReportMetric(100*rate/n, "%ideal")
}
