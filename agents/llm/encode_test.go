package llm

import (
	"bytes"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// checkChatRequest fails unless encodeChatRequest gives json.Marshal's
// bytes and error, and reports whether the fast path took cr.
func checkChatRequest(t *testing.T, cr ChatRequest) bool {
	t.Helper()
	want, werr := json.Marshal(cr)
	got, gerr := encodeChatRequest(cr)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("error %v, json.Marshal %v", gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeChatRequest:\n%s\njson.Marshal:\n%s", got, want)
	}
	_, ok := fastChatRequest(cr)
	return ok
}

func TestEncodeChatRequest(t *testing.T) {
	c := &Client{model: "qwen/\"3\"<&>"}
	s := Sampling{Temperature: ptr(0.0), TopP: ptr(0.9), TopK: ptr(20), MaxTokens: 64, Stop: []string{"</s>"}, Seed: ptr(int64(7)),
		ChatTemplateKwargs: map[string]any{"enable_thinking": false}}
	call := openai.ToolCall{ID: "c1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "search", Arguments: `{"query":["<a&b>"]}`}}
	for _, tc := range []struct {
		name string
		msgs []openai.ChatCompletionMessage
		fast bool
	}{
		{"plain", userMsg("hi"), true},
		{"history", []openai.ChatCompletionMessage{
			{Role: "system", Content: "sys"},
			{Role: "user", Content: "<html> & \u2028 \xff \x01 \"q\" \\ é"},
			{Role: "assistant", ReasoningContent: "think", ToolCalls: []openai.ToolCall{call}},
			{Role: "tool", Content: "result", ToolCallID: "c1", Name: "search"},
			{Role: "assistant", Content: "", Refusal: "no", FunctionCall: &openai.FunctionCall{Name: "f"}},
			{Role: "user", MultiContent: []openai.ChatMessagePart{}},
		}, true},
		{"empty", []openai.ChatCompletionMessage{}, true},
		{"nil", nil, false},
		{"multi content", []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "a"}}}}, false},
		{"both contents", []openai.ChatCompletionMessage{{Role: "user", Content: "a", MultiContent: []openai.ChatMessagePart{}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr := c.chatRequest(Request{Messages: tc.msgs, Tools: executorTools()}, s)
			cr.LogProbs, cr.TopLogProbs, cr.ReturnTokenIDs = true, ptr(0), true
			if got := checkChatRequest(t, cr); got != tc.fast {
				t.Errorf("fast path taken %v, want %v", got, tc.fast)
			}
		})
	}
}

// FuzzEncodeChatRequest checks encodeChatRequest against json.Marshal on
// random message texts.
func FuzzEncodeChatRequest(f *testing.F) {
	f.Add("m", "hi", "", "")
	f.Add("", "<&>\u2028", "\xff", "c")
	f.Fuzz(func(t *testing.T, model, content, reasoning, name string) {
		cr := ChatRequest{ChatCompletionRequest: openai.ChatCompletionRequest{Model: model, Messages: []openai.ChatCompletionMessage{
			{Role: "user", Content: content, Name: name},
			{Role: "assistant", ReasoningContent: reasoning, ToolCalls: []openai.ToolCall{{ID: name, Function: openai.FunctionCall{Name: name, Arguments: content}}}},
		}}}
		if !checkChatRequest(t, cr) {
			t.Fatal("fast path refused a plain request")
		}
	})
}
