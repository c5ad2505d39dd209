package policy

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// Tool sets of the three roles.
var (
	plannerTools  = []Tool{{Name: ToolDelegate}}
	executorTools = []Tool{{Name: ToolSearch}, {Name: ToolVisit}}
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func user(text string) Message { return Message{Role: "user", Content: text} }

func system(text string) Message { return Message{Role: "system", Content: text} }

func toolMsg(name, text string) Message { return Message{Role: "tool", Name: name, Content: text} }

// assistantCalls returns the assistant message that made calls.
func assistantCalls(calls ...ToolCall) Message { return Message{Role: "assistant", ToolCalls: calls} }

// mkCall builds a well-formed tool call.
func mkCall(tb testing.TB, name string, args map[string]any) ToolCall {
	tb.Helper()
	js, err := json.Marshal(args)
	if err != nil {
		tb.Fatalf("marshal %v: %v", args, err)
	}
	return ToolCall{Name: name, Arguments: string(js)}
}

// argsOf decodes a call's arguments and fails the test when they are not a
// JSON object.
func argsOf(tb testing.TB, tc ToolCall) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(tc.Arguments), &m); err != nil || m == nil {
		tb.Fatalf("call %s arguments %q are not a JSON object: %v", tc.Name, tc.Arguments, err)
	}
	return m
}

// wellFormed reports whether a call's arguments are a JSON object.
func wellFormed(tc ToolCall) bool {
	var m map[string]any
	return json.Unmarshal([]byte(tc.Arguments), &m) == nil && m != nil
}

// greedy returns a request at temperature 0.
func greedy(tools []Tool, msgs ...Message) Request {
	return Request{Messages: msgs, Tools: tools}
}
