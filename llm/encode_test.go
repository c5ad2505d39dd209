package llm

import (
	"bytes"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// checkChatRequest fails unless encodeChatRequest, with and without the
// tools cache tc (used twice, to hit it), gives json.Marshal's bytes and
// error, and reports whether the fast path took cr.
func checkChatRequest(t *testing.T, cr ChatRequest, tc *toolsCache) bool {
	t.Helper()
	want, werr := json.Marshal(cr)
	for _, cache := range []*toolsCache{nil, tc, tc} {
		got, gerr := encodeChatRequest(cr, cache)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("error %v, json.Marshal %v", gerr, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeChatRequest:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
	_, ok := fastChatRequest(cr, tc)
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
			if got := checkChatRequest(t, cr, new(toolsCache)); got != tc.fast {
				t.Errorf("fast path taken %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestToolsCacheFollowsEdits checks that a cached tool list edited in
// place, or swapped for one the cache cannot hold, is encoded afresh.
func TestToolsCacheFollowsEdits(t *testing.T) {
	tc := new(toolsCache)
	tools := executorTools()
	cr := ChatRequest{ChatCompletionRequest: openai.ChatCompletionRequest{Model: "m", Messages: userMsg("hi"), Tools: tools}}
	cr.Temperature = ptr(0.0)
	for _, edit := range []struct {
		name string
		do   func()
	}{
		{"cached", func() {}},
		{"description", func() { tools[0].Function.Description = "Search <the> web." }},
		{"parameters in place", func() { tools[1].Function.Parameters.(json.RawMessage)[2] = 'T' }},
		{"strict", func() { tools[1].Function.Strict = true }},
		{"nil parameters", func() { tools[0].Function.Parameters = nil }},
		{"nil raw parameters", func() { tools[0].Function.Parameters = json.RawMessage(nil) }},
		{"map parameters", func() { tools[0].Function.Parameters = map[string]any{"type": "object"} }},
		{"tool parameters", func() { tools[1].Parameters = map[string]any{"x": 1} }},
		{"no function", func() { tools[1] = openai.Tool{Type: "web_search"} }},
		{"empty raw parameters", func() { tools[0].Function.Parameters = json.RawMessage{} }},
	} {
		t.Run(edit.name, func(t *testing.T) {
			edit.do()
			checkChatRequest(t, cr, tc)
		})
	}
	if got := len(*tc.entries.Load()); got > maxToolsEntries {
		t.Errorf("cache holds %d entries, want at most %d", got, maxToolsEntries)
	}
}

// FuzzEncodeChatRequest checks encodeChatRequest against json.Marshal on
// random message texts, tool calls and tool definitions.
func FuzzEncodeChatRequest(f *testing.F) {
	f.Add("m", "hi", "", "", "", `{"type":"object"}`, 0)
	f.Add("", "<&>\u2028", "\xff", "c", "d\n", `{ "a" : [1, 2] }`, 3)
	f.Add("x", "a\x00b\u2029\U0001F600", "\xe2\x82", "", "", `{`, -1)
	f.Fuzz(func(t *testing.T, model, content, reasoning, name, desc, params string, index int) {
		idx := &index
		if index < 0 {
			idx = nil
		}
		cr := ChatRequest{ChatCompletionRequest: openai.ChatCompletionRequest{Model: model, Messages: []openai.ChatCompletionMessage{
			{Role: "user", Content: content, Name: name},
			{Role: "assistant", ReasoningContent: reasoning, FunctionCall: &openai.FunctionCall{Arguments: name},
				ToolCalls: []openai.ToolCall{{Index: idx, ID: name, Function: openai.FunctionCall{Name: name, Arguments: content}}, {Type: openai.ToolTypeFunction}}},
			{Role: "tool", Content: reasoning, ToolCallID: desc, Refusal: params},
		}, Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name, Description: desc, Parameters: json.RawMessage(params)}}},
			ChatTemplateKwargs: map[string]any{"k": content}, Stop: []string{desc}}}
		if !checkChatRequest(t, cr, new(toolsCache)) && json.Valid([]byte(params)) {
			t.Fatal("fast path refused a plain request")
		}
	})
}

// FuzzJSONString checks appendQuoted against json.Marshal (reading strings
// is jsonfast's FuzzScannerText).
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain text", "<a href=\"x\">&amp;</a>\n\t\r\b\f\x00\x1f", "\u2028\u2029é😀\xff\xe2\x82", `\ud83d\ude00 \ud800 \udc00\u0041 \/`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendQuoted(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendQuoted(%q) = %s, json.Marshal %s", s, got, want)
		}
	})
}
