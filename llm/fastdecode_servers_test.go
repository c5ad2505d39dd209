package llm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	openai "github.com/sashabaranov/go-openai"
)

// serverFixtures are chat completions shaped as vLLM and SGLang write them
// (testdata/servers/README.md says where each field comes from), with what
// the fast decoder must leave to encoding/json: nothing for the answers the
// dialects ask for, the reason for the rest.
var serverFixtures = []struct {
	file string
	want fallbacks
}{
	{"vllm_basic.json", fallbacks{}},
	{"vllm_0.10.2_reasoning.json", fallbacks{}},
	{"vllm_reasoning.json", fallbacks{}},
	{"vllm_stop_reason_int.json", fallbacks{}},
	{"vllm_stop_reason_str.json", fallbacks{}},
	{"vllm_length.json", fallbacks{}},
	{"vllm_tool_calls.json", fallbacks{}},
	{"vllm_unicode.json", fallbacks{}},
	{"vllm_unicode_ascii_escaped.json", fallbacks{}},
	{"vllm_prompt_tokens_details.json", fallbacks{}},
	{"vllm_top_logprobs.json", fallbacks{body: FallbackTopLogprobs}},
	{"vllm_n2.json", fallbacks{body: FallbackNGt1}},
	{"vllm_escaped_keys.json", fallbacks{body: FallbackEscapedKey}},
	{"sglang_basic.json", fallbacks{}},
	{"sglang_matched_stop_str.json", fallbacks{}},
	{"sglang_length.json", fallbacks{}},
	{"sglang_reasoning.json", fallbacks{}},
	{"sglang_tool_calls.json", fallbacks{}},
	{"sglang_unicode.json", fallbacks{}},
	{"sglang_cache_report.json", fallbacks{}},
	{"sglang_hidden_states.json", fallbacks{}},
	{"sglang_top_logprobs.json", fallbacks{body: FallbackTopLogprobs}},
	{"sglang_n2.json", fallbacks{body: FallbackNGt1}},
}

func mustFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "servers", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// chatResultDiff compares what the dialects read from two decodes: the
// response (without logprobs.content, which the fast path leaves out), the
// logprobs and the tokens.
func chatResultDiff(want, got *chatResult) string {
	strip := func(r *chatResult) *ChatResponse {
		resp := *r.resp
		resp.Choices = append([]ChatChoice(nil), r.resp.Choices...)
		for i := range resp.Choices {
			if lp := resp.Choices[i].LogProbs; lp != nil {
				resp.Choices[i].LogProbs = &openai.LogProbs{}
			}
		}
		return &resp
	}
	opts := cmp.Options{cmpopts.IgnoreUnexported(openai.ChatCompletionResponse{})}
	return cmp.Diff(strip(want), strip(got), opts) + cmp.Diff(want.logprobs, got.logprobs) + cmp.Diff(want.tokens, got.tokens)
}

// TestServerFixtures checks that the fast decoder takes the answers vLLM
// and SGLang send for the dialects' requests, or counts exactly why it
// does not, and that its results are encoding/json's.
func TestServerFixtures(t *testing.T) {
	for _, tc := range serverFixtures {
		t.Run(tc.file, func(t *testing.T) {
			body := mustFixture(t, tc.file)
			for _, wantTokens := range []bool{false, true} {
				m := NewMetrics()
				got, err := decodeChatPrefix(body, wantTokens, nil, m)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				want, err := slowChat(body, wantTokens)
				if err != nil {
					t.Fatalf("encoding/json: %v", err)
				}
				if d := chatResultDiff(want, got); d != "" {
					t.Errorf("wantTokens %v: decoded result differs from encoding/json's (-json +decoded):\n%s", wantTokens, d)
				}
				if got.ch != &got.resp.Choices[0] {
					t.Error("choice is not the response's first choice")
				}
				for _, reason := range fallbackReasons {
					wantN := 0.0
					if reason == tc.want.body || reason == FallbackMessage && tc.want.message || reason == FallbackMember && tc.want.member {
						wantN = 1
					}
					if n := testutil.ToFloat64(m.decodeFallbacks.WithLabelValues(reason)); n != wantN {
						t.Errorf("wantTokens %v: mgrpo_llm_decode_fallback_total{reason=%q} = %v, want %v", wantTokens, reason, n, wantN)
					}
				}
			}
		})
	}
}

// TestServerFixturesTokens checks the token data the fixtures carry as
// the dialects read it: one logprob per completion id, and the prompt ids
// where each server puts them.
func TestServerFixturesTokens(t *testing.T) {
	for _, tc := range serverFixtures {
		t.Run(tc.file, func(t *testing.T) {
			r, err := decodeChat(mustFixture(t, tc.file), false, nil)
			if err != nil {
				t.Fatal(err)
			}
			ch := r.ch
			switch {
			case ch.MetaInfo != nil: // SGLang
				if len(ch.PromptTokenIDs) == 0 || len(ch.MetaInfo.OutputTokenLogprobs) != len(r.logprobs) || len(r.logprobs) == 0 {
					t.Errorf("%d prompt ids, %d output_token_logprobs, %d logprobs", len(ch.PromptTokenIDs), len(ch.MetaInfo.OutputTokenLogprobs), len(r.logprobs))
				}
			default: // vLLM
				if len(r.resp.PromptTokenIDs) == 0 || len(ch.TokenIDs) != len(r.logprobs) || len(r.logprobs) == 0 {
					t.Errorf("%d prompt ids, %d token ids, %d logprobs", len(r.resp.PromptTokenIDs), len(ch.TokenIDs), len(r.logprobs))
				}
			}
			if ch.Message.Content == "" && len(ch.Message.ToolCalls) == 0 {
				t.Error("neither content nor tool calls")
			}
		})
	}
}

// TestServerFixturesUnicodeEscapes checks that an answer with its
// non-ASCII text written as \u escapes (surrogate pairs for characters
// beyond the BMP), as an ensure_ascii encoder writes it, decodes to the
// same result as the UTF-8 one.
func TestServerFixturesUnicodeEscapes(t *testing.T) {
	plain, err := decodeChat(mustFixture(t, "vllm_unicode.json"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := decodeChat(mustFixture(t, "vllm_unicode_ascii_escaped.json"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := chatResultDiff(plain, escaped); d != "" {
		t.Errorf("escaped answer decodes differently (-utf8 +escaped):\n%s", d)
	}
	if want := " Zürich 東京 😀 ½"; plain.ch.Message.Content != want {
		t.Errorf("content %q, want %q", plain.ch.Message.Content, want)
	}
}

// FuzzFastChatServers is FuzzFastChat seeded with the server fixtures.
func FuzzFastChatServers(f *testing.F) {
	for _, tc := range serverFixtures {
		f.Add(mustFixture(f, tc.file))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFastChat(t, body)
	})
}
