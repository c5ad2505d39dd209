package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRequestBounds checks that what vLLM bounds is bounded: more
// alternatives per position than MaxLogprobs, on every route that asks for
// them, and an n above MaxN get a 400 in the dialect's error shape, at once
// (top_logprobs above the vocabulary used to never answer).
func TestRequestBounds(t *testing.T) {
	_, ts := MustServer(t, testConfig(DialectVLLM))
	_, tsS := MustServer(t, testConfig(DialectSGLang))
	tests := []struct {
		name, url, path string
		body            any
		want            string
	}{
		{"chat top_logprobs over the vocabulary", ts.URL, "/v1/chat/completions",
			map[string]any{"messages": userMsg("hi"), "logprobs": true, "top_logprobs": 5200, "max_tokens": 1},
			`{"error":{"message":"Requested sample logprobs of 5200, which is greater than max allowed: 20","type":"BadRequestError","param":"logprobs","code":400}}`},
		{"chat top_logprobs 21", ts.URL, "/v1/chat/completions",
			map[string]any{"messages": userMsg("hi"), "logprobs": true, "top_logprobs": 21},
			`Requested sample logprobs of 21, which is greater than max allowed: 20`},
		{"completions logprobs", ts.URL, "/v1/completions",
			map[string]any{"prompt": "hi", "logprobs": 5200},
			`Requested sample logprobs of 5200, which is greater than max allowed: 20`},
		{"sglang chat top_logprobs", tsS.URL, "/v1/chat/completions",
			map[string]any{"messages": userMsg("hi"), "logprobs": true, "top_logprobs": 5200},
			`{"object":"error","message":"Requested sample logprobs of 5200, which is greater than max allowed: 20","type":"BadRequestError","param":"logprobs","code":400}`},
		{"sglang generate top_logprobs_num", tsS.URL, "/generate",
			map[string]any{"text": "hi", "return_logprob": true, "top_logprobs_num": 5200},
			`{"error":{"message":"Requested sample logprobs of 5200, which is greater than max allowed: 20"}}`},
		{"chat n", ts.URL, "/v1/chat/completions",
			map[string]any{"messages": userMsg("hi"), "n": 1000000},
			`n must be at most 1024, got 1000000.`},
		{"completions n", ts.URL, "/v1/completions",
			map[string]any{"prompt": "hi", "n": 1025},
			`n must be at most 1024, got 1025.`},
		{"sglang generate n", tsS.URL, "/generate",
			map[string]any{"text": "hi", "sampling_params": map[string]any{"n": 1000000}},
			`n must be at most 1024, got 1000000.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, b := post(t, tc.url+tc.path, tc.body)
			if st != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
				t.Errorf("got %d %s, want 400 containing %s", st, b, tc.want)
			}
		})
	}
	// At the caps, requests are served.
	for _, body := range []map[string]any{
		{"messages": userMsg("hi"), "logprobs": true, "top_logprobs": 20, "max_tokens": 2},
		{"messages": userMsg("hi"), "n": 1024, "max_tokens": 1},
	} {
		if st, _, b := post(t, ts.URL+"/v1/chat/completions", body); st != http.StatusOK {
			t.Errorf("%v: got %d %s, want 200", body, st, b)
		}
	}
}

// TestLogprobsAboveTheVocabularyEnd checks that a server without a logprobs
// cap (MaxLogprobs -1) answers a request for every token as alternatives:
// there are only so many ids to draw, and the draw stops there.
func TestLogprobsAboveTheVocabularyEnd(t *testing.T) {
	cfg := testConfig(DialectVLLM)
	cfg.MaxLogprobs = -1
	s, ts := MustServer(t, cfg)
	vocab := s.Tokenizer().VocabSize()
	st, _, b := post(t, ts.URL+"/v1/chat/completions", map[string]any{"messages": userMsg("hi"), "logprobs": true, "top_logprobs": vocab + 1, "max_tokens": 1})
	if st != http.StatusBadRequest || !strings.Contains(string(b), "greater than max allowed") {
		t.Errorf("top_logprobs vocab+1: got %d %.200s, want 400", st, b)
	}
	g := &genRequest{promptIDs: s.Tokenizer().Encode("hi"), msgs: []Message{{Role: "user", Content: "hi"}}, n: 1, maxTokens: 1, logprobs: true, topLogprobs: vocab}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	choices, err := s.generate(ctx, g)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if got := len(choices[0].lps[0].top); got != s.plain || s.plain >= vocab {
		t.Errorf("alternatives: got %d, want every non-special id (%d of %d)", got, s.plain, vocab)
	}
}

// TestGenerationStopsWithItsRequest checks that generation ends with its
// request's context: a cancelled request's generate returns the context's
// error without finishing its choices, and its handler returns.
func TestGenerationStopsWithItsRequest(t *testing.T) {
	s, _ := MustServer(t, testConfig(DialectVLLM))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := &genRequest{promptIDs: s.Tokenizer().Encode("hi"), msgs: []Message{{Role: "user", Content: "hi"}}, n: 1024, maxTokens: 100, logprobs: true, topLogprobs: 20}
	if choices, err := s.generate(ctx, g); !errors.Is(err, context.Canceled) || choices != nil {
		t.Errorf("generate with a cancelled context: got %d choices, %v; want none and context.Canceled", len(choices), err)
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, stream := range []bool{false, true} {
			body := `{"messages":[{"role":"user","content":"hi"}],"prompt":"hi","n":1024,"logprobs":true,"top_logprobs":20,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			if path == "/v1/completions" {
				body = `{"prompt":"hi","n":1024,"logprobs":20,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			}
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(body))
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.Handler().ServeHTTP(rec, req)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatalf("%s stream=%v: the handler of a cancelled request has not returned after a minute", path, stream)
			}
			if rec.Body.Len() > 0 && rec.Code == http.StatusOK {
				t.Errorf("%s stream=%v: a cancelled request got %d bytes of answer", path, stream, rec.Body.Len())
			}
		}
	}
}
