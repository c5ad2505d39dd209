package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// fakeModel plays a planner (offered a delegate tool: two delegations,
// then an answer) or an executor (a report), with token ids that extend
// from call to call exactly: every message is three ids hashed from what
// the gateway compares (role, text, tool calls), a completion is its
// message's ids.
type fakeModel struct {
	mu   sync.Mutex
	reqs []llm.Request
	// raws are the raw completions it was asked for.
	raws []llm.CompletionRequest
	// fail, when set, fails every call with it.
	fail error
}

func msgIDs(m openai.ChatCompletionMessage) []int32 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s|%s", m.Role, strings.TrimSpace(m.Content))
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(h, "|%s(%s)", tc.Function.Name, tc.Function.Arguments)
	}
	v := int32(h.Sum32() % 50000)
	return []int32{v + 1, v + 2, v + 3}
}

func (f *fakeModel) Chat(_ context.Context, req llm.Request) (*llm.Turn, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	var prompt []int32
	for _, m := range req.Messages {
		prompt = append(prompt, msgIDs(m)...)
	}
	planner := false
	for _, t := range req.Tools {
		if t.Function != nil && t.Function.Name == "delegate" {
			planner = true
		}
	}
	msg := openai.ChatCompletionMessage{Role: "assistant"}
	finish := "stop"
	switch {
	case planner && req.Messages[len(req.Messages)-1].Role != "tool":
		msg.ToolCalls = []openai.ToolCall{
			{ID: "d1", Type: "function", Function: openai.FunctionCall{Name: "delegate", Arguments: `{"task":"Find A."}`}},
			{ID: "d2", Type: "function", Function: openai.FunctionCall{Name: "delegate", Arguments: `{"task":"Find B."}`}},
		}
		finish = "tool_calls"
	case planner:
		msg.Content = "<answer>42</answer>"
	default:
		msg.Content = "report on " + req.Messages[len(req.Messages)-1].Content
	}
	comp := msgIDs(msg)
	return &llm.Turn{Message: msg, ToolCalls: msg.ToolCalls, PromptIDs: prompt, CompletionIDs: comp,
		Logprobs: []float64{-0.1, -0.2, -0.3}, FinishReason: finish, WeightVersion: "v1"}, nil
}

// runeIDs is the fake's tokenizer of raw prompts: one id per rune.
func runeIDs(text string) []int32 {
	var ids []int32
	for _, r := range text {
		ids = append(ids, int32(r))
	}
	return ids
}

// Complete answers a raw completion with "report on " and the prompt's
// last line, its ids one per rune.
func (f *fakeModel) Complete(_ context.Context, req llm.CompletionRequest) (*llm.Turn, error) {
	f.mu.Lock()
	f.raws = append(f.raws, req)
	f.mu.Unlock()
	prompt := req.PromptIDs
	if prompt == nil {
		prompt = runeIDs(req.Prompt)
	}
	lines := strings.Split(strings.TrimSpace(req.Prompt), "\n")
	text := "report on " + lines[len(lines)-1]
	comp := runeIDs(text)
	lps := make([]float64, len(comp))
	for i := range lps {
		lps[i] = -0.5
	}
	return &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: text}, PromptIDs: prompt,
		CompletionIDs: comp, Logprobs: lps, FinishReason: "stop", WeightVersion: "v1"}, nil
}

func (f *fakeModel) completions() []llm.CompletionRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.CompletionRequest(nil), f.raws...)
}

func (f *fakeModel) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.reqs...)
}

// mustGateway starts a gateway of mode over fake models, with cfg's other
// settings, until the test ends.
func mustGateway(t *testing.T, mode rollout.Mode, cfg Config) (*Gateway, map[string]*fakeModel) {
	t.Helper()
	models := map[string]*fakeModel{RolePlanner: {}, RoleExecutor: {}, RoleAgent: {}}
	cfg.Mode = mode
	cfg.Models = map[string]agents.Model{}
	for r, m := range models {
		cfg.Models[r] = m
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	limits := httpserve.Limits{ReadHeaderTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, MaxBodyBytes: 1 << 20}
	if err := g.Listen("127.0.0.1:0", limits); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, models
}

// post sends a JSON body and returns the status and the decoded answer.
func post(t *testing.T, url string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

// agentChat is one chat call of the test agents.
func agentChat(base string, msgs []map[string]any, tools []map[string]any) (map[string]any, error) {
	return agentChatHeader(base, msgs, tools)
}

// agentChatHeader is agentChat with header names and values, in pairs; a
// pair with an empty value is not sent.
func agentChatHeader(base string, msgs []map[string]any, tools []map[string]any, header ...string) (map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"model": "whatever", "messages": msgs, "tools": tools, "temperature": 1.7})
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("chat: %s: %s", resp.Status, raw)
	}
	var out struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) != 1 {
		return nil, fmt.Errorf("chat: bad answer %s", raw)
	}
	return out.Choices[0].Message, nil
}

var delegateTool = []map[string]any{{"type": "function", "function": map[string]any{"name": "delegate",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"task": map[string]any{"type": "string"}}}}}}

// playAgent is a planner-with-executors agent on the offer's base URLs:
// the planner's tool calls run executors in parallel, each on its own
// conversation, until the planner answers.
func playAgent(o offer) (string, error) {
	msgs := []map[string]any{{"role": "system", "content": "You plan."}, {"role": "user", "content": o.Task.Question}}
	for turn := 0; turn < 5; turn++ {
		m, err := agentChat(o.BaseURLs[RolePlanner], msgs, delegateTool)
		if err != nil {
			return "", err
		}
		msgs = append(msgs, m)
		calls, _ := m["tool_calls"].([]any)
		if len(calls) == 0 {
			content, _ := m["content"].(string)
			return content, nil
		}
		reports := make([]string, len(calls))
		errs := make([]error, len(calls))
		var wg sync.WaitGroup
		for i, c := range calls {
			fn := c.(map[string]any)["function"].(map[string]any)
			var args struct{ Task string }
			_ = json.Unmarshal([]byte(fn["arguments"].(string)), &args)
			wg.Go(func() {
				em, err := agentChat(o.BaseURLs[RoleExecutor], []map[string]any{{"role": "system", "content": "You search."}, {"role": "user", "content": args.Task}}, nil)
				if err != nil {
					errs[i] = err
					return
				}
				reports[i], _ = em["content"].(string)
			})
		}
		wg.Wait()
		for i, c := range calls {
			if errs[i] != nil {
				return "", errs[i]
			}
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": c.(map[string]any)["id"], "content": reports[i]})
		}
	}
	return "", fmt.Errorf("no answer in 5 turns")
}

// pushAgent serves playAgent as a push agent service; handle, when set,
// replaces it.
func pushAgent(t *testing.T, handle func(w http.ResponseWriter, o offer)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var o offer
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if handle != nil {
			handle(w, o)
			return
		}
		answer, err := playAgent(o)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"answer": answer})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func testTask() (rollout.RolloutTask, farm.Task) {
	return rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q1", K: 0, Seed: 7}, farm.Task{ID: "q1", Question: "What is it?", Answer: "42"}
}
