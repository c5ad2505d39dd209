package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// longConversation builds a multi-turn research conversation of at least
// minTokens prompt tokens by playing the server's own executor turns and
// answering each tool call with a synthetic page, the way a rollout does.
func longConversation(tb testing.TB, s *Server, minTokens int) []map[string]any {
	tb.Helper()
	h := s.Handler()
	msgs := []map[string]any{
		{"role": "system", "content": "You are a careful research assistant. Use the tools to find evidence before you answer."},
		{"role": "user", "content": question},
	}
	page := func(turn int) string {
		var b strings.Builder
		for i := 0; i < 12; i++ {
			fmt.Fprintf(&b, "Result %d.%d: Velmora Labs was founded in %d by Ida Marston, who was born in Ravenport. ", turn, i, 1990+i)
			b.WriteString("The company headquarters moved to the capital after the founding; see https://www.velmora.sim/about for the press release.\n")
		}
		return b.String()
	}
	for turn := 0; turn < 100; turn++ {
		body, _ := json.Marshal(map[string]any{"messages": msgs, "tools": researchTools, "seed": turn, "max_tokens": 512})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			tb.Fatalf("turn %d: status %d: %s", turn, rec.Code, rec.Body)
		}
		var resp struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			tb.Fatal(err)
		}
		if resp.Usage.PromptTokens >= minTokens {
			return msgs
		}
		m := resp.Choices[0].Message
		msg := map[string]any{"role": "assistant", "content": m["content"]}
		if r, ok := m["reasoning_content"].(string); ok {
			msg["reasoning_content"] = r
		}
		calls, _ := m["tool_calls"].([]any)
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		msgs = append(msgs, msg)
		if len(calls) == 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": "Please keep checking the sources. " + page(turn)})
		}
		for _, c := range calls {
			id, _ := c.(map[string]any)["id"].(string)
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": page(turn)})
		}
	}
	tb.Fatalf("conversation stayed under %d tokens", minTokens)
	return nil
}

// BenchmarkChatLongPrompt measures the server's CPU per chat call on a
// multi-turn prompt of about 3,000 tokens with the RL fields a rollout farm
// asks for (token ids and logprobs). The handler is called directly, one
// request at a time, so ns/op is the server's own cost per request.
func BenchmarkChatLongPrompt(b *testing.B) {
	for _, tc := range []struct {
		name, dialect string
		extra         map[string]any
	}{
		{"vllm", DialectVLLM, map[string]any{"return_token_ids": true, "logprobs": true}},
		{"vllm-top2", DialectVLLM, map[string]any{"return_token_ids": true, "logprobs": true, "top_logprobs": 2}},
		{"sglang", DialectSGLang, map[string]any{"return_prompt_token_ids": true, "return_meta_info": true, "logprobs": true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, _ := MustServer(b, testConfig(tc.dialect))
			msgs := longConversation(b, s, 3000)
			req := map[string]any{"messages": msgs, "tools": researchTools, "seed": 11}
			for k, v := range tc.extra {
				req[k] = v
			}
			body, _ := json.Marshal(req)
			h := s.Handler()
			var respBytes int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				respBytes = rec.Body.Len()
			}
			b.ReportMetric(float64(respBytes), "resp-bytes")
		})
	}
}
