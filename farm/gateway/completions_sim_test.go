package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// exchange is one request the sim served: its path, body and answer.
type exchange struct {
	path     string
	req      map[string]any
	response []byte
}

// engineLog records what the sim received and answered.
type engineLog struct {
	mu  sync.Mutex
	all []exchange
}

// teeWriter keeps a copy of what a handler writes.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (l *engineLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(data))
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		var v map[string]any
		_ = json.Unmarshal(data, &v)
		l.mu.Lock()
		l.all = append(l.all, exchange{path: r.URL.Path, req: v, response: tw.buf.Bytes()})
		l.mu.Unlock()
	})
}

// on returns the exchanges of path, in order.
func (l *engineLog) on(path string) []exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []exchange
	for _, e := range l.all {
		if e.path == path {
			out = append(out, e)
		}
	}
	return out
}

// simGateway starts a gateway of mode mgrpo over the sim in dialect, each
// role a real token-capturing client, the executor's completions capped
// at maxTokens.
func simGateway(t *testing.T, dialect string, maxTokens int, options ...func(*simllm.Config)) (*Gateway, *simllm.Tokenizer, *engineLog) {
	t.Helper()
	cfg := simllm.DefaultConfig()
	cfg.Dialect, cfg.Seed = dialect, 5
	for _, o := range options {
		o(&cfg)
	}
	sim, err := simllm.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := &engineLog{}
	ts := httptest.NewServer(log.wrap(sim.Handler()))
	t.Cleanup(func() { sim.Close(); ts.CloseClientConnections(); ts.Close() })
	gcfg := Config{Mode: rollout.ModeMGRPO, Models: map[string]agents.Model{}, MaxTokens: map[string]int{RoleExecutor: maxTokens}}
	for _, role := range []string{RolePlanner, RoleExecutor} {
		c, err := llm.New(llm.Config{Role: role, Dialect: dialect, Model: simllm.DefaultModel, Endpoints: []string{ts.URL}, CaptureTokens: true,
			Retry: llm.RetryPolicy{MaxAttempts: 2, WaitMin: time.Millisecond, WaitMax: time.Millisecond, CallTimeout: 20 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		gcfg.Models[role] = c
	}
	g, err := New(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	limits := httpserve.Limits{ReadHeaderTimeout: time.Second, BodyTimeout: time.Second, IdleTimeout: time.Second, MaxBodyBytes: 1 << 20}
	if err := g.Listen("127.0.0.1:0", limits); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, sim.Tokenizer(), log
}

// chatML renders turns (role, text pairs) as the agent's own template
// would, ending with the generation prompt.
func chatML(turns ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(turns); i += 2 {
		b.WriteString(simllm.IMStart + turns[i] + "\n" + turns[i+1] + simllm.IMEnd + "\n")
	}
	b.WriteString(simllm.IMStart + "assistant\n")
	return b.String()
}

// completion is what the agent read from one completions answer.
type completion struct {
	Text         string  `json:"text"`
	FinishReason string  `json:"finish_reason"`
	PromptIDs    []int32 `json:"prompt_token_ids"`
	TokenIDs     []int32 `json:"token_ids"`
	Logprobs     *struct {
		Tokens        []string  `json:"tokens"`
		TokenLogprobs []float64 `json:"token_logprobs"`
	} `json:"logprobs"`
}

func complete(t *testing.T, url string, body map[string]any, header ...string) completion {
	t.Helper()
	status, out := post(t, url+"/completions", body, header...)
	if status != http.StatusOK || out["object"] != "text_completion" {
		t.Fatalf("completion: %d %v, want 200 and a text_completion", status, out)
	}
	raw, _ := json.Marshal(out["choices"])
	var choices []completion
	if err := json.Unmarshal(raw, &choices); err != nil || len(choices) != 1 {
		t.Fatalf("choices %s, want one", raw)
	}
	return choices[0]
}

func wide(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// engineIDs reads the prompt the engine generated from and the ids it
// sampled from one exchange of the completion route.
func engineIDs(t *testing.T, dialect string, tok *simllm.Tokenizer, e exchange) (prompt, completion []int) {
	t.Helper()
	if dialect == llm.DialectVLLM {
		text, _ := e.req["prompt"].(string)
		var resp struct {
			Choices []struct {
				PromptTokenIDs []int `json:"prompt_token_ids"`
				TokenIDs       []int `json:"token_ids"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(e.response, &resp); err != nil || len(resp.Choices) != 1 {
			t.Fatalf("engine answer %s", e.response)
		}
		if ids, ok := e.req["prompt"].([]any); ok {
			for _, id := range ids {
				prompt = append(prompt, int(id.(float64)))
			}
		} else {
			prompt = tok.Encode(text)
		}
		if !slices.Equal(prompt, resp.Choices[0].PromptTokenIDs) {
			t.Errorf("engine prompt ids %v, its tokenizer gives %v", resp.Choices[0].PromptTokenIDs, prompt)
		}
		return prompt, resp.Choices[0].TokenIDs
	}
	for _, id := range e.req["input_ids"].([]any) {
		prompt = append(prompt, int(id.(float64)))
	}
	var resp struct {
		OutputIDs []int `json:"output_ids"`
	}
	if err := json.Unmarshal(e.response, &resp); err != nil {
		t.Fatalf("engine answer %s", e.response)
	}
	return prompt, resp.OutputIDs
}

// TestCompletionsSim checks raw completions end to end against the sim in
// both dialects: the engine gets the agent's prompt as it is (the text, or
// on SGLang its ids, no chat template added), the recorded turns hold
// exactly the engine's ids, a call whose prompt extends an open
// trajectory's prompt and answer (by text or by ids) continues it, a
// prompt that extends none starts a new one, a trajectory named by the
// header takes any prompt and splits its samples where the ids do not
// extend (a drift), and the samples' loss mask covers the completions
// alone. The run's sampling settings win over the agent's.
func TestCompletionsSim(t *testing.T) {
	for _, dialect := range []string{llm.DialectVLLM, llm.DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			g, tok, log := simGateway(t, dialect, 40)
			o, release, done := startHeld(t, g)
			exec := o.BaseURLs[RoleExecutor]

			p1 := chatML("system", "You search.", "user", "Find the capital of France.")
			c1 := complete(t, exec, map[string]any{"prompt": p1, "max_tokens": 500, "temperature": 1.7, "logprobs": 0, "return_token_ids": true})
			route := "/v1/completions"
			if dialect == llm.DialectSGLang {
				route = "/generate"
				tk := log.on("/v1/tokenize")
				if len(tk) != 1 || tk[0].req["prompt"] != p1 {
					t.Fatalf("tokenize requests %v, want one of the raw prompt", tk)
				}
			}
			first := log.on(route)
			if len(first) != 1 || len(log.on("/v1/chat/completions")) != 0 {
				t.Fatalf("%d calls of %s and %d chat calls, want one raw call and no chat", len(first), route, len(log.on("/v1/chat/completions")))
			}
			if dialect == llm.DialectVLLM {
				if first[0].req["prompt"] != p1 || first[0].req["max_tokens"] != 40.0 || first[0].req["temperature"] != nil {
					t.Errorf("engine request %v, want the raw prompt, max_tokens capped to 40 and the agent's temperature dropped", first[0].req)
				}
			} else if sp := first[0].req["sampling_params"].(map[string]any); sp["max_new_tokens"] != 40.0 || sp["temperature"] != nil {
				t.Errorf("engine sampling %v, want max_new_tokens capped to 40 and the agent's temperature dropped", sp)
			}
			prompt, comp := engineIDs(t, dialect, tok, first[0])
			if !slices.Equal(prompt, tok.Encode(p1)) {
				t.Errorf("the engine generated from %v, want the raw prompt's ids %v (no template)", prompt, tok.Encode(p1))
			}
			if !slices.Equal(wide(c1.PromptIDs), prompt) || !slices.Equal(wide(c1.TokenIDs), comp) {
				t.Errorf("the agent was told ids %v → %v, the engine's are %v → %v", c1.PromptIDs, c1.TokenIDs, prompt, comp)
			}
			if c1.Logprobs == nil || len(c1.Logprobs.TokenLogprobs) != len(comp) || c1.Logprobs.Tokens[0] != "token_id:"+itoa(comp[0]) {
				t.Errorf("logprobs %+v, want one token_id:N entry per completion id", c1.Logprobs)
			}

			// The agent continues its conversation as text (which never
			// holds the end-of-turn token: the agent writes it)...
			p2 := p1 + c1.Text + simllm.IMEnd + "\n" + simllm.IMStart + "user\nAnd of Spain?" + simllm.IMEnd + "\n" + simllm.IMStart + "assistant\n"
			c2 := complete(t, exec, map[string]any{"prompt": p2, "return_token_ids": true})
			// ...then as token ids, which hold it when the model stopped
			// on it.
			end := ""
			if c2.TokenIDs[len(c2.TokenIDs)-1] != int32(tok.SpecialID(simllm.IMEnd)) {
				end = simllm.IMEnd
			}
			ids3 := append(append(slices.Clone(c2.PromptIDs), c2.TokenIDs...), int32s(tok.Encode(end+"\n"+simllm.IMStart+"user\nThanks.\n"+simllm.IMEnd+"\n"+simllm.IMStart+"assistant\n"))...)
			complete(t, exec, map[string]any{"prompt": ids3})
			// A prompt that extends nothing starts a trajectory; streamed.
			status, stream := postStream(t, exec+"/completions", map[string]any{"prompt": chatML("user", "Find B."), "stream": true, "stream_options": map[string]any{"include_usage": true}})
			if status != 200 || !strings.Contains(stream, `"object":"text_completion"`) || !strings.HasSuffix(strings.TrimSpace(stream), "data: [DONE]") || !strings.Contains(stream, `"usage"`) {
				t.Errorf("streamed completion: %d %s, want text_completion events, usage and [DONE]", status, stream)
			}
			// The planner names its trajectory: unrelated prompts join it.
			plan := o.BaseURLs[RolePlanner]
			complete(t, plan, map[string]any{"prompt": chatML("user", "What is it?")}, TrajectoryHeader, "main")
			complete(t, plan, map[string]any{"prompt": chatML("system", "Plan.", "user", "What is it, again?")}, TrajectoryHeader, "main")
			close(release)
			tree := <-done

			calls := log.on(route)
			if len(calls) != 6 {
				t.Fatalf("%d engine calls on %s, want 6", len(calls), route)
			}
			if len(tree.Executors) != 2 || len(tree.Executors[0].Turns) != 3 || len(tree.Executors[1].Turns) != 1 {
				t.Fatalf("executor trajectories %d, want the continued conversation (3 turns) and the new one (1)", len(tree.Executors))
			}
			turns := append(slices.Clone(tree.Executors[0].Turns), tree.Executors[1].Turns...)
			for i, turn := range turns {
				prompt, comp := engineIDs(t, dialect, tok, calls[i])
				if !slices.Equal(wide(turn.PromptIDs), prompt) || !slices.Equal(wide(turn.CompletionIDs), comp) || len(turn.Logprobs) != len(comp) {
					t.Errorf("turn %d: recorded %v → %v, the engine ran %v → %v", i, turn.PromptIDs, turn.CompletionIDs, prompt, comp)
				}
			}
			if tree.Executors[0].Task != p1 {
				t.Errorf("executor task %q, want its first prompt", tree.Executors[0].Task)
			}
			seqs, drifts, err := llm.Sequences(tree.Executors[0].Turns)
			if err != nil {
				t.Fatal(err)
			}
			if len(seqs) != 1 || len(drifts) != 0 {
				t.Errorf("executor: %d sequences, drifts %+v; want one sequence, the continuations extending the engine's ids", len(seqs), drifts)
			}
			checkMask(t, seqs, tree.Executors[0].Turns)
			if p := tree.Planner; len(p.Turns) != 2 {
				t.Fatalf("planner turns %d, want the named trajectory's 2", len(p.Turns))
			}
			if seqs, drifts, _ := llm.Sequences(tree.Planner.Turns); len(seqs) != 2 || len(drifts) != 1 {
				t.Errorf("planner: %d sequences, %d drifts; want the unrelated prompts split by a drift", len(seqs), len(drifts))
			}
		})
	}
}

// checkMask checks that each sequence is its last turn's ids and that its
// loss mask is 1 exactly on its turns' completions, with their logprobs.
func checkMask(t *testing.T, seqs []llm.Sequence, turns []*llm.Turn) {
	t.Helper()
	for _, s := range seqs {
		last := turns[s.FirstTurn+s.NumTurns-1]
		if !slices.Equal(s.InputIDs, append(slices.Clone(last.PromptIDs), last.CompletionIDs...)) {
			t.Errorf("sequence at turn %d: ids are not its last turn's prompt and completion", s.FirstTurn)
		}
		want := make([]int8, len(s.InputIDs))
		for _, turn := range turns[s.FirstTurn : s.FirstTurn+s.NumTurns] {
			for j := range turn.CompletionIDs {
				want[len(turn.PromptIDs)+j] = 1
				if s.Logprobs[len(turn.PromptIDs)+j] != turn.Logprobs[j] {
					t.Errorf("sequence at turn %d: logprob at %d is not the sampler's", s.FirstTurn, len(turn.PromptIDs)+j)
				}
			}
		}
		if !slices.Equal(s.LossMask, want) {
			t.Errorf("sequence at turn %d: loss mask is not 1 exactly on the completions", s.FirstTurn)
		}
	}
}

// postStream posts body and returns the status and the event stream.
func postStream(t *testing.T, url string, body any) (int, string) {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String()
}

func int32s(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

func itoa(n int) string {
	data, _ := json.Marshal(n)
	return string(data)
}
