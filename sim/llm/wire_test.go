package llm

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name.golden, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: response differs from golden\ngot:  %s\nwant: %s", name, got, want)
	}
}

func userMsg(text string) []map[string]any {
	return []map[string]any{{"role": "user", "content": text}}
}

// TestGoldenWire pins the full JSON of every route and RL field, for both
// dialects, streaming and not, with a fixed clock and seed.
func TestGoldenWire(t *testing.T) {
	type req struct {
		name, method, path string
		body               any
	}
	chat := func(extra map[string]any) map[string]any {
		b := map[string]any{"model": DefaultModel, "messages": userMsg(question), "tools": plannerTools, "seed": 3}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	common := []req{
		{"chat", "POST", "/v1/chat/completions", chat(nil)},
		{"chat_stream", "POST", "/v1/chat/completions", chat(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}, "logprobs": true})},
		{"chat_plain_n2", "POST", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "Say hello."}}}}, "n": 2, "max_tokens": 6, "temperature": 0}},
		{"chat_stop", "POST", "/v1/chat/completions", chat(map[string]any{"stop": []string{"Velmora"}, "return_token_ids": true})},
		{"completions_text", "POST", "/v1/completions", map[string]any{"prompt": "<|im_start|>user\n" + question + "<|im_end|>\n<|im_start|>assistant\n", "max_tokens": 12, "logprobs": 2, "return_token_ids": true, "seed": 1}},
		{"completions_ids_stream", "POST", "/v1/completions", map[string]any{"prompt": []int{1937, 1200, 10, 73, 1938, 10, 1937, 1596, 10}, "max_tokens": 4, "stream": true, "return_token_ids": true, "seed": 1}},
		{"models", "GET", "/v1/models", nil},
	}
	dialects := map[string][]req{
		DialectVLLM: append(common,
			req{"chat_rl", "POST", "/v1/chat/completions", chat(map[string]any{"return_token_ids": true, "logprobs": true, "top_logprobs": 2, "return_tokens_as_token_ids": true, "max_tokens": 5})},
			req{"chat_stream_ids", "POST", "/v1/chat/completions", chat(map[string]any{"stream": true, "return_token_ids": true, "max_tokens": 8})},
			req{"tokenize_prompt", "POST", "/tokenize", map[string]any{"prompt": "Hello world", "return_token_strs": true}},
			req{"tokenize_messages", "POST", "/tokenize", map[string]any{"messages": userMsg("Hi"), "add_generation_prompt": true}},
			req{"detokenize", "POST", "/detokenize", map[string]any{"tokens": []int{1937, 1200, 10, 73}}},
			req{"render_chat", "POST", "/v1/chat/completions/render", chat(map[string]any{"logprobs": true, "top_logprobs": 1, "max_tokens": 7})},
			req{"render_completions", "POST", "/v1/completions/render", map[string]any{"prompt": [][]int{{1937, 1200}, {10, 73}}, "temperature": 0.5}},
			req{"generate_tokens", "POST", "/inference/v1/generate", map[string]any{"token_ids": []int{1937, 1200, 10, 73, 1938, 10, 1937, 1596, 10}, "request_id": "r1", "sampling_params": map[string]any{"max_tokens": 6, "seed": 2, "logprobs": 1}}},
			req{"generate_tokens_stream", "POST", "/inference/v1/generate", map[string]any{"token_ids": []int{1937, 1200, 10, 73, 1938, 10, 1937, 1596, 10}, "request_id": "r2", "stream": true, "stream_options": map[string]any{"include_usage": true}, "sampling_params": map[string]any{"max_tokens": 3, "seed": 2}}},
			req{"derender_chat", "POST", "/v1/chat/completions/derender", map[string]any{"model": DefaultModel, "prompt_tokens": 9, "chat_request": chat(nil),
				"generate_response": map[string]any{"request_id": "r1", "choices": []map[string]any{{"index": 0, "finish_reason": "stop", "token_ids": []int{1938, 10, 1937, 1596}}}}}},
			req{"is_paused", "GET", "/is_paused", nil},
			req{"is_sleeping", "GET", "/is_sleeping", nil},
		),
		DialectSGLang: append(common,
			req{"chat_rl", "POST", "/v1/chat/completions", chat(map[string]any{"return_prompt_token_ids": true, "return_meta_info": true, "logprobs": true, "top_logprobs": 1, "max_tokens": 5})},
			req{"generate", "POST", "/generate", map[string]any{"text": "<|im_start|>user\n" + question + "<|im_end|>\n<|im_start|>assistant\n", "sampling_params": map[string]any{"max_new_tokens": 6, "temperature": 0}, "return_logprob": true}},
			req{"generate_ids_eos", "POST", "/generate", map[string]any{"input_ids": []int{1937, 1200, 10, 73, 1938, 10, 1937, 1596, 10}, "sampling_params": map[string]any{"temperature": 0, "stop": []string{"zzz"}}}},
			req{"generate_stream", "POST", "/generate", map[string]any{"text": "Hi", "sampling_params": map[string]any{"max_new_tokens": 3, "temperature": 0}, "stream": true}},
			req{"tokenize", "POST", "/v1/tokenize", map[string]any{"prompt": "Hello world"}},
			req{"detokenize", "POST", "/v1/detokenize", map[string]any{"tokens": []int{1937, 1200, 10, 73}}},
			req{"model_info", "GET", "/get_model_info", nil},
			req{"weight_version", "GET", "/get_weight_version", nil},
		),
	}
	for dialect, reqs := range dialects {
		_, ts := MustServer(t, testConfig(dialect))
		for _, r := range reqs {
			var body []byte
			var status int
			if r.method == "GET" {
				status, body = get(t, ts.URL+r.path)
			} else {
				status, _, body = post(t, ts.URL+r.path, r.body)
			}
			if status != 200 {
				t.Errorf("%s %s: status %d: %s", dialect, r.name, status, body)
			}
			golden(t, dialect+"_"+r.name, body)
		}
	}
}
