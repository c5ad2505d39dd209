package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/benchproc"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// benchLogprob is the logprob of completion token i in the canned answers:
// like an engine's, it needs 15 to 17 significant digits.
func benchLogprob(i int) float64 { return -float64(i%97+1) / 7.3 }

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
		lps[i] = map[string]any{"token": "tok", "logprob": benchLogprob(i), "bytes": []int{116, 111, 107}, "top_logprobs": []any{}}
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

// cannedSGLang returns an SGLang chat answer (return_prompt_token_ids and
// return_meta_info) with prompt ids for a history of historyBytes and a
// 200-token completion.
func cannedSGLang(historyBytes int) []byte {
	prompt := make([]int, historyBytes/4)
	for i := range prompt {
		prompt[i] = 1000 + i%50000
	}
	const n = 200
	lps := make([]map[string]any, n)
	out := make([][3]any, n)
	for i := range n {
		lps[i] = map[string]any{"token": "tok", "logprob": benchLogprob(i), "bytes": []int{116, 111, 107}, "top_logprobs": []any{}}
		out[i] = [3]any{benchLogprob(i), 2000 + i, nil}
	}
	b, _ := json.Marshal(map[string]any{
		"id": "x", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": strings.Repeat("tok", n), "reasoning_content": nil, "tool_calls": nil},
			"logprobs": map[string]any{"content": lps}, "finish_reason": "stop", "matched_stop": 151645,
			"prompt_token_ids": prompt,
			"meta_info": map[string]any{"id": "x", "finish_reason": map[string]any{"type": "stop", "matched": 151645},
				"prompt_tokens": len(prompt), "completion_tokens": n, "cached_tokens": 0, "weight_version": "default",
				"output_token_logprobs": out}}},
		"usage":    map[string]any{"prompt_tokens": len(prompt), "completion_tokens": n, "total_tokens": len(prompt) + n},
		"metadata": map[string]any{"weight_version": "default"},
	})
	return b
}

// benchHistory returns a request whose messages hold about size bytes.
func benchHistory(size int) Request {
	var msgs []openai.ChatCompletionMessage
	msgs = append(msgs, openai.ChatCompletionMessage{Role: "system", Content: "sys"})
	for used := 0; used < size; used += 512 {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: strings.Repeat("w", 480)})
	}
	return Request{Messages: msgs, Tools: executorTools(), TrajectoryKey: "k"}
}

// BenchmarkChat measures a call per history size against a loopback HTTP
// server that answers a pre-encoded body with a single Write. The figure
// includes the server's side of the exchange (net/http reading the request
// and writing the answer) and the loopback syscalls; BenchmarkChatClient
// leaves those out.
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
			benchChatCalls(b, c, size)
		})
	}
}

// cpuClock measures the process's CPU time (user and system, every thread:
// the garbage collector's workers included) across a benchmark loop.
type cpuClock struct{ start time.Duration }

func startCPU(b *testing.B) cpuClock {
	b.Helper()
	b.ResetTimer()
	return cpuClock{start: processCPU(b)}
}

// report adds the CPU time per iteration as the cpu-ns/op metric. Unlike
// ns/op (wall time of one goroutine), it counts work done on other cores.
func (c cpuClock) report(b *testing.B) {
	b.Helper()
	if b.N > 0 {
		b.ReportMetric(float64(processCPU(b)-c.start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	cpu, _ := benchproc.Usage(tb)
	return cpu
}

// cannedTransport answers every request in memory with a pre-encoded body,
// after reading the request body as a connection would.
type cannedTransport struct{ body []byte }

func (t cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)),
		Request:       r,
	}, nil
}

// BenchmarkChatClient measures the client's own CPU time and allocations
// per call: the transport is an in-memory fake that drains the request and
// returns a pre-encoded answer, so no server, socket or syscall is timed.
// What remains is request encoding, routing, the retry layer, reading the
// body and decoding it into a Turn.
func BenchmarkChatClient(b *testing.B) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		for _, size := range []int{1 << 10, 8 << 10, 64 << 10} {
			b.Run(fmt.Sprintf("dialect=%s/history=%dKB", dialect, size>>10), func(b *testing.B) {
				var body []byte
				if dialect == DialectVLLM {
					body = cannedVLLM(size)
				} else {
					body = cannedSGLang(size)
				}
				c := mustClient(b, Config{Dialect: dialect, Endpoints: []string{"http://fake"}, CaptureTokens: true,
					HTTPClient: &http.Client{Transport: cannedTransport{body: body}}})
				switch d := c.dialect.(type) {
				case *vllmDialect:
					d.mode.Store(vllmModern)
				case *sglangDialect:
					d.mode.Store(sglangChat)
				}
				benchChatCalls(b, c, size)
			})
		}
	}
}

// BenchmarkConcurrent10k fires 10,000 concurrent calls at the sim with a
// 1 s time to first token and enough slots for all of them, and reports
// calls per second against the ideal of 10,000 per second.
// concurrentSim serves the sim with 1 s latency and enough slots for n
// concurrent calls, over unencrypted HTTP/2: 10,000 HTTP/1.1 connections
// need 20,000 descriptors in one process (client and server ends), past the
// limit of the machines this runs on, while HTTP/2 multiplexes the calls
// over one connection (the server allows n streams on it). It returns the
// server URL and a transport for it.
func concurrentSim(b *testing.B, n int) (string, *http.Transport) {
	cfg := simConfig(DialectVLLM, 1)
	cfg.Slots = 2 * n
	cfg.TTFT = time.Second
	sim, err := simllm.NewServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(sim.Handler())
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	ts.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 2 * n}
	ts.Start()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	b.Cleanup(func() { tr.CloseIdleConnections(); sim.Close(); ts.Close() })
	return ts.URL, tr
}

// runConcurrent starts n calls at once per iteration, waits for all, and
// reports calls/s and the share of the ideal n calls per second of latency.
// One untimed call first opens the connection, as a farm's long-lived
// client has it open; otherwise the n calls race to dial n connections.
func runConcurrent(b *testing.B, n int, call func() error) {
	if err := call(); err != nil {
		b.Fatalf("warm-up call: %v", err)
	}
	var total time.Duration
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := time.Now()
		for range n {
			wg.Go(func() {
				if err := call(); err != nil {
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
	b.ReportMetric(100*rate/float64(n), "%ideal")
}

// BenchmarkConcurrent10k runs 10,000 concurrent token-capturing calls
// against the sim with 1 s latency. Run it next to
// BenchmarkConcurrent10kRawHTTP, which makes the same calls with a bare
// net/http client: on a small machine the sim's and the kernel's CPU bound
// both below the ideal, and the ratio of the two shows what the client
// itself adds.
func BenchmarkConcurrent10k(b *testing.B) {
	if testing.Short() {
		b.Skip("heavy: 10,000 concurrent connections")
	}
	const n = 10000
	url, tr := concurrentSim(b, n)
	c := mustClient(b, Config{Dialect: DialectVLLM, Endpoints: []string{url}, CaptureTokens: true, HTTPClient: &http.Client{Transport: tr},
		Pool: PoolConfig{MaxInFlightPerEndpoint: 2 * n}, Retry: RetryPolicy{MaxAttempts: 3, CallTimeout: time.Minute}})
	c.dialect.(*vllmDialect).mode.Store(vllmModern)
	req := Request{Messages: userMsg("What is the capital of the country where the Orlen group was founded?"), Sampling: &Sampling{MaxTokens: 16}}
	runConcurrent(b, n, func() error {
		_, err := c.Chat(context.Background(), req)
		return err
	})
}

// BenchmarkConcurrent10kRawHTTP is the baseline of BenchmarkConcurrent10k:
// the same request body posted with a bare net/http client that only reads
// the answer, so it measures what the sim, the kernel and net/http cost.
func BenchmarkConcurrent10kRawHTTP(b *testing.B) {
	if testing.Short() {
		b.Skip("heavy: 10,000 concurrent connections")
	}
	const n = 10000
	url, tr := concurrentSim(b, n)
	hc := &http.Client{Transport: tr}
	body, err := json.Marshal(map[string]any{
		"model": simllm.DefaultModel, "max_tokens": 16, "logprobs": true, "top_logprobs": 0, "return_token_ids": true,
		"messages": []map[string]string{{"role": "user", "content": "What is the capital of the country where the Orlen group was founded?"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	runConcurrent(b, n, func() error {
		resp, err := hc.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	})
}

// benchChatCalls makes c's calls with a history of size bytes in a
// benchmark loop, reporting allocations, throughput and process CPU.
func benchChatCalls(b *testing.B, c *Client, size int) {
	req := benchHistory(size)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	cpu := startCPU(b)
	for b.Loop() {
		if _, err := c.Chat(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}
