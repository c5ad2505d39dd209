package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestAbortKeepsGeneratedTokens aborts running non-streaming requests
// (vLLM: POST /pause?mode=abort; SGLang: a weight update with
// abort_all_requests) while they decode one token per 500 ms: each answers
// 200 with finish reason "abort" and the first tokens and logprobs of the
// sequence the same request gets uninterrupted.
func TestAbortKeepsGeneratedTokens(t *testing.T) {
	chat := map[string]any{"messages": userMsg("What is the capital of Bretoria?"), "seed": 3, "max_tokens": 40,
		"logprobs": true, "return_token_ids": true, "return_prompt_token_ids": true, "return_meta_info": true}
	generate := map[string]any{"text": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "return_logprob": true,
		"sampling_params": map[string]any{"max_new_tokens": 40, "sampling_seed": 3}}
	for _, tc := range []struct {
		name, dialect, path string
		body                map[string]any
	}{
		{"vllm chat", DialectVLLM, "/v1/chat/completions", chat},
		{"sglang chat", DialectSGLang, "/v1/chat/completions", chat},
		{"sglang generate", DialectSGLang, "/generate", generate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ref := MustServer(t, testConfig(tc.dialect))
			st, _, full := post(t, ref.URL+tc.path, tc.body)
			if st != 200 {
				t.Fatalf("uninterrupted: %d %s", st, full)
			}
			cfg := testConfig(tc.dialect)
			cfg.PerToken = 500 * time.Millisecond
			s, ts := MustServer(t, cfg)
			type answer struct {
				status int
				body   []byte
				err    error
			}
			js, err := json.Marshal(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan answer, 1)
			go func() {
				resp, err := http.Post(ts.URL+tc.path, "application/json", bytes.NewReader(js))
				if err != nil {
					done <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				done <- answer{resp.StatusCode, b, err}
			}()
			deadline := time.Now().Add(30 * time.Second)
			for s.eng.running.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if tc.dialect == DialectVLLM {
				post(t, ts.URL+"/pause?mode=abort", "")
				defer post(t, ts.URL+"/resume", "")
			} else {
				post(t, ts.URL+"/update_weights_from_disk", map[string]any{"model_path": "/ckpt/2", "abort_all_requests": true})
			}
			got := <-done
			if got.err != nil {
				t.Fatal(got.err)
			}
			if got.status != 200 {
				t.Fatalf("aborted: %d %s", got.status, got.body)
			}
			wantIDs, wantLps, _, _ := generated(t, tc.dialect, tc.path, full)
			ids, lps, finish, message := generated(t, tc.dialect, tc.path, got.body)
			n := len(ids)
			if finish != "abort" || n == 0 || n >= len(wantIDs) || len(lps) != n {
				t.Fatalf("finish %q with %d ids and %d logprobs of %d; want abort with the first ones: %s", finish, n, len(lps), len(wantIDs), got.body)
			}
			for i := range n {
				if ids[i] != wantIDs[i] || lps[i] != wantLps[i] {
					t.Fatalf("token %d: %d (%v), uninterrupted %d (%v)", i, ids[i], lps[i], wantIDs[i], wantLps[i])
				}
			}
			if tc.dialect == DialectSGLang && message != "Aborted" {
				t.Errorf("meta_info.finish_reason message %q, want Aborted", message)
			}
		})
	}
}

// generated reads the completion ids, logprobs, finish reason and SGLang's
// abort message of an answer.
func generated(t *testing.T, dialect, path string, body []byte) (ids []int, lps []float64, finish, message string) {
	t.Helper()
	type meta struct {
		FinishReason struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"finish_reason"`
		OutputTokenLogprobs [][3]any `json:"output_token_logprobs"`
	}
	fromMeta := func(m meta) {
		for _, e := range m.OutputTokenLogprobs {
			lps = append(lps, e[0].(float64))
			ids = append(ids, int(e[1].(float64)))
		}
		finish, message = m.FinishReason.Type, m.FinishReason.Message
	}
	if path == "/generate" {
		var g struct {
			MetaInfo meta `json:"meta_info"`
		}
		if err := json.Unmarshal(body, &g); err != nil {
			t.Fatal(err)
		}
		fromMeta(g.MetaInfo)
		return
	}
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			TokenIDs     []int  `json:"token_ids"`
			Logprobs     struct {
				Content []struct {
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
			MetaInfo meta `json:"meta_info"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("answer %s: %v", body, err)
	}
	ch := r.Choices[0]
	if dialect == DialectSGLang {
		fromMeta(ch.MetaInfo)
		if ch.FinishReason != finish {
			t.Errorf("choice finish_reason %q, meta_info's %q", ch.FinishReason, finish)
		}
		return
	}
	for _, c := range ch.Logprobs.Content {
		lps = append(lps, c.Logprob)
	}
	return ch.TokenIDs, lps, ch.FinishReason, ""
}
