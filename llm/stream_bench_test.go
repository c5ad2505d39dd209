package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// cannedVLLMStream returns the stream vLLM sends for cannedVLLM's answer:
// the role chunk with the prompt ids, one chunk per completion token (its
// text, id and logprob entry; the finish on the last), the usage chunk
// and [DONE].
func cannedVLLMStream(historyBytes int) []byte {
	prompt := make([]int, historyBytes/4)
	for i := range prompt {
		prompt[i] = 1000 + i%50000
	}
	const n = 200
	var out bytes.Buffer
	event := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(&out, "data: %s\n\n", b)
	}
	head := map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m"}
	chunk := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range head {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	event(chunk(map[string]any{"prompt_token_ids": prompt,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}}}))
	for i := range n {
		ch := map[string]any{"index": 0, "delta": map[string]any{"content": "tok"}, "token_ids": []int{2000 + i}, "finish_reason": nil,
			"logprobs": map[string]any{"content": []any{map[string]any{"token": "tok", "logprob": benchLogprob(i), "bytes": []int{116, 111, 107}, "top_logprobs": []any{}}}}}
		if i == n-1 {
			ch["finish_reason"], ch["stop_reason"] = "stop", nil
		}
		event(chunk(map[string]any{"choices": []any{ch}}))
	}
	event(chunk(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": len(prompt), "completion_tokens": n, "total_tokens": len(prompt) + n}}))
	out.WriteString("data: [DONE]\n\n")
	return out.Bytes()
}

// streamTransport is cannedTransport for an event stream: the body, of
// unknown length, with the event-stream content type.
type streamTransport struct{ body []byte }

func (t streamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"text/event-stream; charset=utf-8"}},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: -1,
		Request:       r,
	}, nil
}

// BenchmarkStreamClient measures the client's CPU per call for one vLLM
// answer (8 KB history, 200 completion tokens) received unstreamed and
// streamed (one chunk per token), side by side in one run, through
// in-memory transports: what differs is reading and assembling 202 events
// instead of decoding one body. Compare the two cpu-ns/op medians.
func BenchmarkStreamClient(b *testing.B) {
	const size = 8 << 10
	for _, mode := range []string{"unstreamed", "streamed"} {
		b.Run("mode="+mode, func(b *testing.B) {
			rt := http.RoundTripper(cannedTransport{body: cannedVLLM(size)})
			if mode == "streamed" {
				rt = streamTransport{body: cannedVLLMStream(size)}
			}
			c := mustClient(b, Config{Dialect: DialectVLLM, Endpoints: []string{"http://fake"}, CaptureTokens: true,
				Stream: mode == "streamed", HTTPClient: &http.Client{Transport: rt}})
			c.dialect.(*vllmDialect).mode.Store(vllmModern)
			benchChatCalls(b, c, size)
		})
	}
}

// TestStreamBenchmarkAnswersAgree checks that the benchmark's streamed and
// unstreamed answers decode to the same Turn, so the benchmark compares
// like with like.
func TestStreamBenchmarkAnswersAgree(t *testing.T) {
	want, err := decodeChat(cannedVLLM(1<<10), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeVLLMStream(cannedVLLMStream(1<<10), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, g := resultTurn(want), resultTurn(got)
	if a.Message.Content != g.Message.Content || !equalInts(a.CompletionIDs, g.CompletionIDs) || !equalInts(a.PromptIDs, g.PromptIDs) ||
		len(a.Logprobs) != len(g.Logprobs) || a.Usage != g.Usage || a.FinishReason != g.FinishReason {
		t.Errorf("the benchmark's stream and answer decode differently")
	}
}
