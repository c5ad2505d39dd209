package gateway

import (
	"encoding/json"
	"reflect"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// reasoningAnswer is an engine answer with reasoning, text and two calls,
// one whose arguments are no JSON object.
var reasoningAnswer = openai.ChatCompletionMessage{Role: "assistant", ReasoningContent: "think first", Content: "let me look",
	ToolCalls: []openai.ToolCall{
		{ID: "call_0_0", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "search", Arguments: `{"query": ["a"], "n":2}`}},
		{ID: "call_0_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "visit", Arguments: `not json`}},
	}}

// TestResponsesRoundTrip checks that an answer's output items, echoed back
// as the Agents SDK does (through JSON), translate into the very message
// the engine answered: reasoning, text and calls with their ids and text.
func TestResponsesRoundTrip(t *testing.T) {
	data, _ := json.Marshal(outputItems(reasoningAnswer))
	var echoed []responseItem
	if err := json.Unmarshal(data, &echoed); err != nil {
		t.Fatal(err)
	}
	if echoed[0].Type != "reasoning" || echoed[1].Type != "message" || echoed[2].Type != "function_call" {
		t.Fatalf("output items %s", data)
	}
	msgs, err := itemsMessages(nil, echoed)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || !reflect.DeepEqual(msgs[0], reasoningAnswer) {
		t.Errorf("echoed output became %+v, want the answer %+v", msgs, reasoningAnswer)
	}
}

// TestMessagesRoundTrip checks the same for a Message's content blocks:
// the thinking block (empty signature), the text, and each tool_use whose
// input the SDK re-serialized maps back to the engine's argument text, by
// id, the one that was no JSON object included.
func TestMessagesRoundTrip(t *testing.T) {
	g := &Gateway{}
	msg := g.anthropicAnswer("executor", messagesRequest{}, &llm.Turn{FinishReason: "stop"}, reasoningAnswer)
	if b := msg.Content[0]; b.Type != "thinking" || *b.Thinking != "think first" || *b.Signature != "" {
		t.Errorf("first block %+v, want the thinking with an empty signature", b)
	}
	if *msg.StopReason != "tool_use" || string(msg.Content[3].Input) != "{}" {
		t.Errorf("stop %q, last input %s", *msg.StopReason, msg.Content[3].Input)
	}
	data, _ := json.Marshal(msg.Content)
	var blocks []anthropicBlock
	if err := json.Unmarshal(data, &blocks); err != nil {
		t.Fatal(err)
	}
	blocks[2].Input = json.RawMessage(`{"n": 2, "query": ["a"]}`) // another key order
	args := map[string]string{}
	for _, tc := range reasoningAnswer.ToolCalls {
		args[tc.ID] = tc.Function.Arguments
	}
	got, ids, err := assistantMessage("messages[1]", blocks, args)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, reasoningAnswer) || !ids["call_0_0"] || !ids["call_0_1"] {
		t.Errorf("echoed content became %+v, want the answer %+v", got, reasoningAnswer)
	}
	// An edited input is the agent's, sent as it wrote it.
	blocks[2].Input = json.RawMessage(`{"query": ["b"]}`)
	got, _, _ = assistantMessage("messages[1]", blocks, args)
	if got.ToolCalls[0].Function.Arguments != `{"query":["b"]}` {
		t.Errorf("edited input sent as %q", got.ToolCalls[0].Function.Arguments)
	}
}
