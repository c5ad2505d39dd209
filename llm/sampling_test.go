package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// captured is a request body a test server received, by path.
type captured struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

// wrap records every POST body before the sim serves it.
func (c *captured) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			c.mu.Lock()
			if c.bodies == nil {
				c.bodies = map[string][][]byte{}
			}
			c.bodies[r.URL.Path] = append(c.bodies[r.URL.Path], b)
			c.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (c *captured) last(tb testing.TB, path string) map[string]any {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	bs := c.bodies[path]
	if len(bs) == 0 {
		tb.Fatalf("no request to %s (got %d paths)", path, len(c.bodies))
	}
	var m map[string]any
	if err := json.Unmarshal(bs[len(bs)-1], &m); err != nil {
		tb.Fatalf("%s body: %v", path, err)
	}
	return m
}

// TestRequestsCarrySampling checks that every generating request, in both
// dialects and on every route, says how to sample: the role's settings,
// the call's seed and its completion cap under the route's name for it.
func TestRequestsCarrySampling(t *testing.T) {
	s := Sampling{Temperature: ptr(0.7), TopP: ptr(0.9), TopK: ptr(20), MinP: ptr(0.05),
		RepetitionPenalty: ptr(1.1), PresencePenalty: ptr(0.0), FrequencyPenalty: ptr(0.3),
		MaxTokens: 48, Stop: []string{"</never>"}}
	want := map[string]any{"temperature": 0.7, "top_p": 0.9, "top_k": 20.0, "min_p": 0.05,
		"repetition_penalty": 1.1, "presence_penalty": 0.0, "frequency_penalty": 0.3}
	for _, tc := range []struct {
		name, dialect string
		stream        bool
		native        bool
		path, max     string
		absent        string
		seed          string
	}{
		{"vllm", DialectVLLM, false, false, "/v1/chat/completions", "max_completion_tokens", "max_tokens", "seed"},
		{"vllm stream", DialectVLLM, true, false, "/v1/chat/completions", "max_completion_tokens", "max_tokens", "seed"},
		{"sglang chat", DialectSGLang, false, false, "/v1/chat/completions", "max_tokens", "", "seed"},
		{"sglang generate", DialectSGLang, false, true, "/generate", "max_new_tokens", "", "sampling_seed"},
		{"sglang generate stream", DialectSGLang, true, true, "/generate", "max_new_tokens", "", "sampling_seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cap captured
			srv := mustSim(t, simConfig(tc.dialect, 1), cap.wrap)
			c := mustClient(t, Config{Role: "executor", Dialect: tc.dialect, Endpoints: []string{srv.ts.URL},
				CaptureTokens: true, Stream: tc.stream, Sampling: s})
			if tc.native && !tc.stream {
				c.dialect.(*sglangDialect).mode.Store(sglangNative)
			}
			seed := int64(5)
			_, err := c.Chat(context.Background(), Request{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Who founded Velmora Labs?"}},
				Sampling: &Sampling{Seed: &seed}})
			if err != nil {
				t.Fatal(err)
			}
			body := cap.last(t, tc.path)
			params := body
			if tc.native {
				params, _ = body["sampling_params"].(map[string]any)
			}
			for k, v := range want {
				if got := params[k]; got != v {
					t.Errorf("%s: %v, want %v", k, got, v)
				}
			}
			if got := params[tc.max]; got != 48.0 {
				t.Errorf("%s: %v, want 48", tc.max, got)
			}
			if _, ok := params[tc.absent]; tc.absent != "" && ok {
				t.Errorf("%s sent beside %s", tc.absent, tc.max)
			}
			if got := params[tc.seed]; got != 5.0 {
				t.Errorf("%s: %v, want 5", tc.seed, got)
			}
			if stop, _ := params["stop"].([]any); len(stop) != 1 || stop[0] != "</never>" {
				t.Errorf("stop: %v", params["stop"])
			}
		})
	}
}

// TestOpenAIDialectDropsEngineSampling checks that a hosted API is sent
// only the OpenAI sampling fields.
func TestOpenAIDialectDropsEngineSampling(t *testing.T) {
	var cap captured
	srv := mustSim(t, simConfig(DialectVLLM, 1), cap.wrap)
	c := mustClient(t, Config{Role: "judge", Dialect: DialectOpenAI, Endpoints: []string{srv.ts.URL},
		Sampling: Sampling{Temperature: ptr(1.0), TopP: ptr(1.0), TopK: ptr(-1), MinP: ptr(0.0), RepetitionPenalty: ptr(1.0),
			PresencePenalty: ptr(0.0), FrequencyPenalty: ptr(0.0), MaxTokens: 8}})
	if _, err := c.Chat(context.Background(), Request{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	body := cap.last(t, "/v1/chat/completions")
	for _, k := range []string{"top_k", "min_p", "repetition_penalty"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent to an openai-dialect endpoint", k)
		}
	}
	for _, k := range []string{"temperature", "top_p", "presence_penalty", "frequency_penalty", "max_tokens"} {
		if _, ok := body[k]; !ok {
			t.Errorf("%s not sent", k)
		}
	}
}

// TestSGLangStreamedPromptEndsWithAssistantHeader checks the prompt ids
// of a streamed SGLang turn against a sim whose /v1/tokenize behaves as
// SGLang's (add_generation_prompt is not a field of its request and is
// ignored): they end with the generation prompt, so /generate starts the
// assistant's turn instead of continuing the user's.
func TestSGLangStreamedPromptEndsWithAssistantHeader(t *testing.T) {
	srv := mustSim(t, simConfig(DialectSGLang, 1), nil)
	c := mustClient(t, Config{Role: "executor", Dialect: DialectSGLang, Endpoints: []string{srv.ts.URL}, CaptureTokens: true, Stream: true})
	tr, err := c.Chat(context.Background(), Request{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Who founded Velmora Labs?"}}})
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := srv.sim.Tokenizer().Decode(wideIDs(tr.PromptIDs))
	if err != nil || !strings.HasSuffix(prompt, simllm.IMStart+"assistant\n") {
		t.Errorf("prompt does not end with the assistant header: %q (%v)", tail(prompt), err)
	}
}

// TestReadsBothReasoningFields checks that the client keeps a message's
// reasoning whichever field the server answers it in.
func TestReadsBothReasoningFields(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		cfg := simConfig(DialectVLLM, 1)
		cfg.ReasoningContent = legacy
		srv := mustSim(t, cfg, nil)
		c := mustClient(t, Config{Role: "planner", Dialect: DialectVLLM, Endpoints: []string{srv.ts.URL}, CaptureTokens: true})
		tr, err := c.Chat(context.Background(), Request{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Who founded Velmora Labs?"}}})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Message.ReasoningContent == "" {
			t.Errorf("reasoning_content mode %v: the turn lost the reasoning", legacy)
		}
	}
}
