package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// bodies records the JSON bodies the sim received, by path.
type bodies struct {
	mu sync.Mutex
	by map[string][]map[string]any
}

func (b *bodies) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var v map[string]any
		_ = json.Unmarshal(data, &v)
		b.mu.Lock()
		if b.by == nil {
			b.by = map[string][]map[string]any{}
		}
		b.by[r.URL.Path] = append(b.by[r.URL.Path], v)
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(data))
		h.ServeHTTP(w, r)
	})
}

func (b *bodies) get(path string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.by[path]
}

// TestComplete checks raw completions against the sim in both dialects:
// the engine gets the prompt as given (text or ids, no chat template) on
// its completion route, and the turn holds the engine's prompt ids,
// completion ids and one logprob per completion id.
func TestComplete(t *testing.T) {
	const prompt = "<|im_start|>user\nFind the capital of France.<|im_end|>\n<|im_start|>assistant\n"
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			var seen bodies
			s := mustSim(t, simConfig(dialect, 3), seen.wrap)
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
			tok := s.sim.Tokenizer()
			want := tok.Encode(prompt)
			seed := int64(5)
			text, err := c.Complete(context.Background(), CompletionRequest{Prompt: prompt, Sampling: &Sampling{MaxTokens: 64, Seed: &seed}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(wideIDs(text.PromptIDs), want) {
				t.Errorf("prompt ids %v, want the tokenizer's ids of the raw prompt %v", text.PromptIDs, want)
			}
			if len(text.CompletionIDs) == 0 || len(text.Logprobs) != len(text.CompletionIDs) {
				t.Errorf("%d completion ids, %d logprobs, want some and one each", len(text.CompletionIDs), len(text.Logprobs))
			}
			decoded, _ := tok.DecodeSkipSpecial(wideIDs(text.CompletionIDs))
			if strings.TrimSpace(decoded) != strings.TrimSpace(text.Message.Content) {
				t.Errorf("completion text %q, its ids decode to %q", text.Message.Content, decoded)
			}
			// SGLang's text prompt is tokenized first: two requests.
			attempts := map[string]int{DialectVLLM: 1, DialectSGLang: 2}[dialect]
			if text.WeightVersion == "" || text.Attempts != attempts {
				t.Errorf("weight version %q attempts %d, want %d attempts with a version", text.WeightVersion, text.Attempts, attempts)
			}
			ids, err := c.Complete(context.Background(), CompletionRequest{PromptIDs: text.PromptIDs, Sampling: &Sampling{MaxTokens: 64, Seed: &seed}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids.PromptIDs, text.PromptIDs) || !slices.Equal(ids.CompletionIDs, text.CompletionIDs) {
				t.Errorf("the id prompt's turn %v → %v, want the text prompt's %v → %v (same prompt, same seed)", ids.PromptIDs, ids.CompletionIDs, text.PromptIDs, text.CompletionIDs)
			}
			route := "/v1/completions"
			if dialect == DialectSGLang {
				route = "/generate"
				if tk := seen.get("/v1/tokenize"); len(tk) != 1 || tk[0]["prompt"] != prompt || tk[0]["messages"] != nil {
					t.Errorf("tokenize bodies %v, want one with the raw prompt", tk)
				}
			}
			got := seen.get(route)
			if len(got) != 2 || len(seen.get("/v1/chat/completions")) != 0 {
				t.Fatalf("%d bodies on %s, %d chat calls; want 2 and none", len(got), route, len(seen.get("/v1/chat/completions")))
			}
			if dialect == DialectVLLM {
				if got[0]["prompt"] != prompt || got[0]["return_token_ids"] != true || got[0]["logprobs"] != 0.0 {
					t.Errorf("completion body %v, want the raw prompt with return_token_ids and logprobs 0", got[0])
				}
			} else if in, _ := got[0]["input_ids"].([]any); len(in) != len(want) || got[0]["return_logprob"] != true {
				t.Errorf("generate body %v, want the prompt's %d ids with return_logprob", got[0], len(want))
			}
		})
	}
}

// TestCompleteRefusesEmpty checks that an empty prompt is refused before
// any request.
func TestCompleteRefusesEmpty(t *testing.T) {
	s := mustSim(t, simConfig(DialectVLLM, 1), nil)
	c := mustClient(t, Config{Role: "executor", Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Model: simllm.DefaultModel})
	if _, err := c.Complete(context.Background(), CompletionRequest{}); err == nil {
		t.Fatal("an empty prompt was sent")
	}
}

// TestDecodeCompletion checks the completions decoder on the answers it
// must refuse or keep.
func TestDecodeCompletion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		err     error
		partial bool
		ids     bool
	}{
		{"tokens", `{"choices":[{"text":"hi","finish_reason":"stop","prompt_token_ids":[1,2],"token_ids":[3,4],"logprobs":{"token_logprobs":[-0.1,-0.2]}}]}`, nil, false, true},
		{"no token data", `{"choices":[{"text":"hi","finish_reason":"stop"}]}`, nil, false, false},
		{"aborted", `{"choices":[{"text":"h","finish_reason":"abort","prompt_token_ids":[1],"token_ids":[3],"logprobs":{"token_logprobs":[-0.1]}}]}`, ErrAborted, true, true},
		{"logprob count", `{"choices":[{"text":"hi","finish_reason":"stop","prompt_token_ids":[1],"token_ids":[3,4],"logprobs":{"token_logprobs":[-0.1]}}]}`, ErrLogprobMismatch, false, false},
		{"null logprob", `{"choices":[{"text":"hi","finish_reason":"stop","prompt_token_ids":[1],"token_ids":[3],"logprobs":{"token_logprobs":[null]}}]}`, ErrLogprobMismatch, false, false},
		{"no choices", `{"choices":[]}`, ErrMalformedResponse, false, false},
		{"no finish", `{"choices":[{"text":"hi","finish_reason":null}]}`, ErrMalformedResponse, false, false},
		{"not JSON", `{"choices":`, ErrMalformedResponse, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turn, err := decodeCompletion([]byte(tc.body), http.Header{"X-Weight-Version": {"v3"}})
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if turn.Partial() != tc.partial {
				t.Errorf("partial %v, want %v", turn.Partial(), tc.partial)
			}
			if tc.ids && (!turn.HasTokens() || turn.WeightVersion != "v3") {
				t.Errorf("turn %+v, want its ids and the header's weight version", turn)
			}
			if err != nil && !tc.partial && turn != nil {
				t.Errorf("a refused answer returned a turn %+v", turn)
			}
		})
	}
}

// FuzzDecodeCompletion holds the completions decoder to its contract on
// any body: no panic, and a turn without error has one logprob per
// completion id or no token data at all.
func FuzzDecodeCompletion(f *testing.F) {
	f.Add([]byte(`{"choices":[{"text":"hi","finish_reason":"stop","prompt_token_ids":[1,2],"token_ids":[3,4],"logprobs":{"token_logprobs":[-0.1,-0.2]}}]}`))
	f.Add([]byte(`{"choices":[{"finish_reason":"abort","token_ids":[3]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		turn, err := decodeCompletion(body, nil)
		if err != nil || turn == nil {
			return
		}
		if (len(turn.PromptIDs) > 0 || len(turn.CompletionIDs) > 0) && checkTokens(turn) != nil {
			t.Errorf("accepted turn with bad tokens: %+v", turn)
		}
	})
}
