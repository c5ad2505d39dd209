package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// scriptModel answers each call with the function of the call's role
// (decided by the system prompt), recording the requests.
type scriptModel struct {
	mu       sync.Mutex
	requests []llm.Request
	respond  func(req llm.Request) (*llm.Turn, error)
}

func (m *scriptModel) Chat(_ context.Context, req llm.Request) (*llm.Turn, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	return m.respond(req)
}

func (m *scriptModel) calls() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.requests...)
}

// textTurn is a final message.
func textTurn(content string) *llm.Turn {
	return &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: content}, FinishReason: "stop",
		PromptIDs: []int32{1}, CompletionIDs: []int32{2}, Logprobs: []float64{-0.1}}
}

// abortedTurn is a generation the server aborted after three tokens.
func abortedTurn(content string) *llm.Turn {
	return &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: content}, FinishReason: "abort",
		Abort: &llm.Abort{By: llm.AbortedByServer}, PromptIDs: []int32{1}, CompletionIDs: []int32{2, 3, 4}, Logprobs: []float64{-0.1, -0.2, -0.3}}
}

// callTurn is a message calling tools; each call is name:argsJSON.
func callTurn(calls ...string) *llm.Turn {
	t := &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant"}, FinishReason: "tool_calls",
		PromptIDs: []int32{1}, CompletionIDs: []int32{2}, Logprobs: []float64{-0.1}}
	for i, c := range calls {
		name, args, _ := strings.Cut(c, ":")
		tc := openai.ToolCall{ID: fmt.Sprintf("call-%d", i), Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
		t.Message.ToolCalls = append(t.Message.ToolCalls, tc)
		t.ToolCalls = append(t.ToolCalls, tc)
	}
	return t
}

// toolMessages counts the tool results already in the conversation.
func toolMessages(req llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			n++
		}
	}
	return n
}

// userText is the first user message of a request.
func userText(req llm.Request) string {
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			return m.Content
		}
	}
	return ""
}

// fakeToolbox offers search and visit and answers with canned text; it
// tracks how many calls run at once.
type fakeToolbox struct {
	running, peak atomic.Int32
	block         chan struct{} // when set, calls wait on it
}

func (f *fakeToolbox) Specs() []tools.Spec {
	obj := json.RawMessage(`{"type":"object"}`)
	return []tools.Spec{{Name: "search", Parameters: obj}, {Name: "visit", Parameters: obj}}
}

func (f *fakeToolbox) Call(ctx context.Context, name string, args json.RawMessage) tools.Observation {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
		}
	}
	return tools.Observation{Text: fmt.Sprintf("%s result for %s", name, args), Meta: tools.Meta{Tool: name}}
}
