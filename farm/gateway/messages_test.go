package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
)

// anthropicDelegate is the delegate tool as the Anthropic SDK sends it.
var anthropicDelegate = map[string]any{"name": "delegate", "description": "hand off",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{"task": map[string]any{"type": "string"}}}}

// anthropicErrorType checks body is Anthropic's error shape and returns
// its type and message.
func anthropicErrorOf(t *testing.T, body map[string]any) (string, string) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if body["type"] != "error" || !ok {
		t.Fatalf("body %v: not Anthropic's error shape", body)
	}
	typ, _ := e["type"].(string)
	msg, _ := e["message"].(string)
	return typ, msg
}

// TestMessagesTrajectory drives a planner through the Messages API as the
// Anthropic SDK's tool-use loop does: tool_use blocks come back with input
// as an object (in another key order than the engine wrote), tool_result
// blocks answer them; both calls are turns of one trajectory, and the
// echoed calls reach the engine as the engine's own argument text.
func TestMessagesTrajectory(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{Token: "sekret"})
	o, release, done := startHeld(t, g)
	base := strings.TrimSuffix(o.BaseURLs[RolePlanner], "/v1") + "/v1"
	hdr := []string{"x-api-key", "sekret", "anthropic-version", "2023-06-01"}
	user := map[string]any{"role": "user", "content": o.Task.Question}
	status, first := post(t, base+"/messages", map[string]any{"model": "planner", "max_tokens": 100, "system": []any{map[string]any{"type": "text", "text": "plan"}},
		"messages": []any{user}, "tools": []any{anthropicDelegate}}, hdr...)
	if status != 200 || first["type"] != "message" || first["stop_reason"] != "tool_use" {
		t.Fatalf("first call: %d %v", status, first)
	}
	content := first["content"].([]any)
	if len(content) != 2 {
		t.Fatalf("content %v, want two tool_use blocks", content)
	}
	var results []any
	for _, b := range content {
		tu := b.(map[string]any)
		if tu["type"] != "tool_use" || tu["input"].(map[string]any)["task"] == nil {
			t.Errorf("block %v, want a tool_use with its input object", tu)
		}
		results = append(results, map[string]any{"type": "tool_result", "tool_use_id": tu["id"], "content": []any{map[string]any{"type": "text", "text": "found"}}})
	}
	if u := first["usage"].(map[string]any); u["input_tokens"].(float64) != 6 || u["output_tokens"].(float64) != 3 {
		t.Errorf("usage %v", u)
	}
	// The SDK re-serializes input; the engine wrote {"task":"Find A."}.
	echo := `{"role":"assistant","content":[{"type":"tool_use","id":"d1","name":"delegate","input":{ "task" : "Find A." }},` +
		`{"type":"tool_use","id":"d2","name":"delegate","input":{"task":"Find B."}}]}`
	var assistant map[string]any
	_ = json.Unmarshal([]byte(echo), &assistant)
	status, second := post(t, base+"/messages", map[string]any{"max_tokens": 100, "system": "plan",
		"messages": []any{user, assistant, map[string]any{"role": "user", "content": results}}, "tools": []any{anthropicDelegate}},
		"Authorization", "Bearer sekret")
	if status != 200 || second["stop_reason"] != "end_turn" {
		t.Fatalf("second call: %d %v", status, second)
	}
	if text := second["content"].([]any)[0].(map[string]any); text["type"] != "text" || text["text"] != "<answer>42</answer>" {
		t.Errorf("answer %v", text)
	}
	reqs := models[RolePlanner].requests()
	got := reqs[1].Messages
	if len(got) != 5 || got[2].ToolCalls[0].Function.Arguments != `{"task":"Find A."}` || got[3].Role != "tool" || got[3].ToolCallID != "d1" || got[3].Content != "found" {
		t.Errorf("second call reached the engine as %+v", got)
	}
	if status, body := post(t, base+"/messages", map[string]any{"max_tokens": 5, "messages": []any{user}}); status != 401 {
		t.Errorf("no key: %d %v, want 401", status, body)
	} else if typ, _ := anthropicErrorOf(t, body); typ != "authentication_error" {
		t.Errorf("no key: type %q", typ)
	}
	close(release)
	tree := <-done
	if len(tree.Planner.Turns) != 2 {
		t.Errorf("planner has %d turns, want both calls in one trajectory", len(tree.Planner.Turns))
	}
}

// TestMessagesStream checks the streamed events: each named on its event
// line, a tool_use block's input as input_json_delta, the stop reason in
// message_delta.
func TestMessagesStream(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	status, names, events := sseEvents(t, o.BaseURLs[RolePlanner]+"/messages", map[string]any{"max_tokens": 50, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "q"}}, "tools": []any{anthropicDelegate}})
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if status != 200 || strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("stream %d %v, want %v", status, names, want)
	}
	for i, ev := range events {
		if ev["type"] != names[i] {
			t.Errorf("event %d: data type %v under event %s", i, ev["type"], names[i])
		}
	}
	d := events[2]["delta"].(map[string]any)
	if d["type"] != "input_json_delta" || d["partial_json"] != `{"task":"Find A."}` {
		t.Errorf("delta %v", d)
	}
	if md := events[7]["delta"].(map[string]any); md["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v", md)
	}
	status, names, events = sseEvents(t, o.BaseURLs[RoleExecutor]+"/messages", map[string]any{"max_tokens": 50, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "Find A."}}})
	if status != 200 || len(events) != 6 || events[2]["delta"].(map[string]any)["text"] != "report on Find A." {
		t.Errorf("text stream %d %v %v", status, names, events)
	}
	close(release)
	<-done
}

// TestMessagesBadInput checks each refusal: 400 (413 for an oversized
// body) in Anthropic's error shape naming the field, nothing forwarded to
// the engine, and the rollout's conversation before the refusals continues
// after them as the same trajectory; another rollout's tool_use ids are
// unknown here.
func TestMessagesBadInput(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
	other, releaseOther, doneOther := startHeld(t, g)
	_, foreign := post(t, other.BaseURLs[RolePlanner]+"/messages", map[string]any{"max_tokens": 50, "tools": []any{anthropicDelegate},
		"messages": []any{map[string]any{"role": "user", "content": "Q?"}}})
	foreignUse := foreign["content"].([]any)[0].(map[string]any)
	if foreignUse["type"] != "tool_use" {
		t.Fatalf("the other rollout's planner answered %v, want a tool_use", foreign)
	}
	o, release, done := startHeld(t, g)
	ex := o.BaseURLs[RoleExecutor]
	user := map[string]any{"role": "user", "content": "Find A."}
	status, first := post(t, ex+"/messages", map[string]any{"max_tokens": 5, "messages": []any{user}})
	if status != 200 {
		t.Fatalf("the rollout's first call: %d %v", status, first)
	}
	engineCalls := func() int {
		n := 0
		for _, m := range models {
			n += len(m.requests()) + len(m.completions())
		}
		return n
	}
	before := engineCalls()
	msgs := func(ms ...any) map[string]any { return map[string]any{"max_tokens": 5, "messages": ms} }
	useT1 := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "f", "input": map[string]any{}}}}
	resultT1 := map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "r"}}}
	for _, tc := range []struct {
		name, field string
		body        any
	}{
		{"no max_tokens", "max_tokens", map[string]any{"messages": []any{user}}},
		{"wrong max_tokens type", "max_tokens", map[string]any{"max_tokens": "5", "messages": []any{user}}},
		{"wrong messages type", "messages", map[string]any{"max_tokens": 5, "messages": "hi"}},
		{"wrong system type", "system", map[string]any{"max_tokens": 5, "system": 5, "messages": []any{user}}},
		{"wrong tools type", "tools", map[string]any{"max_tokens": 5, "tools": "search", "messages": []any{user}}},
		{"wrong stop_sequences type", "stop_sequences", map[string]any{"max_tokens": 5, "stop_sequences": "END", "messages": []any{user}}},
		{"wrong stream type", "stream", map[string]any{"max_tokens": 5, "stream": "yes", "messages": []any{user}}},
		{"wrong content type", "messages[0].content", msgs(map[string]any{"role": "user", "content": 5})},
		{"wrong tool_result content type", "messages[2].content[0].content", msgs(user, useT1,
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": 5}}})},
		{"unknown block", "messages[0].content[0].type", msgs(map[string]any{"role": "user", "content": []any{map[string]any{"type": "image"}}})},
		{"unknown assistant block", "messages[1].content[0].type", msgs(user,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "server_tool_use", "id": "s", "name": "web_search"}}})},
		{"unknown tool_use_id", "messages[0].content[0].tool_use_id", msgs(map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_nope", "content": "x"}}})},
		{"another rollout's tool_use_id", "messages[0].content[0].tool_use_id", msgs(map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": foreignUse["id"], "content": "x"}}})},
		{"tool_result for an earlier turn's tool_use", "messages[4].content[0].tool_use_id", msgs(user, useT1, resultT1,
			map[string]any{"role": "assistant", "content": "done"}, resultT1)},
		{"tool_use without id", "messages[1].content[0]", msgs(user,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "name": "f", "input": map[string]any{}}}})},
		{"thinking without text", "messages[1].content[0].thinking", msgs(user,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "thinking", "signature": ""}}})},
		{"server tool", "tools[0].type", map[string]any{"max_tokens": 5, "messages": []any{user}, "tools": []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}}},
		{"tool without input_schema", "tools[0].input_schema", map[string]any{"max_tokens": 5, "messages": []any{user}, "tools": []any{map[string]any{"name": "f"}}}},
		{"forced tool", "tool_choice.type", map[string]any{"max_tokens": 5, "messages": []any{user}, "tool_choice": map[string]any{"type": "any"}}},
		{"bad role", "messages[0].role", msgs(map[string]any{"role": "system", "content": "x"})},
		{"tool_use input not object", "messages[1].content[0].input", msgs(user,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t", "name": "f", "input": "x"}}})},
		{"no messages", "messages", map[string]any{"max_tokens": 5, "messages": []any{}}},
		{"not json", "request body", "{"},
	} {
		status, body := post(t, ex+"/messages", tc.body)
		if status != 400 {
			t.Errorf("%s: %d %v, want 400", tc.name, status, body)
			continue
		}
		typ, msg := anthropicErrorOf(t, body)
		if typ != "invalid_request_error" || !strings.Contains(msg, tc.field) {
			t.Errorf("%s: %s %q, want invalid_request_error naming %q", tc.name, typ, msg, tc.field)
		}
	}
	if status, body := post(t, ex+"/messages", msgs(map[string]any{"role": "user", "content": strings.Repeat("x", 2<<20)})); status != 413 {
		t.Errorf("oversized body: %d %v, want 413", status, body)
	} else if typ, _ := anthropicErrorOf(t, body); typ != "request_too_large" {
		t.Errorf("oversized body: type %q", typ)
	}
	if n := engineCalls() - before; n != 0 {
		t.Errorf("%d calls forwarded for refused requests, want none", n)
	}
	if status, body := post(t, ex+"/messages", msgs(user, map[string]any{"role": "assistant", "content": first["content"]},
		map[string]any{"role": "user", "content": "And B?"})); status != 200 {
		t.Errorf("the rollout's next call after the refusals: %d %v", status, body)
	}
	close(release)
	close(releaseOther)
	tree := <-done
	<-doneOther
	if len(tree.Executors) != 1 || tree.Executors[0].Error != "" || len(tree.Executors[0].Turns) != 2 {
		t.Errorf("executors %+v, want the conversation's one trajectory of two turns, unharmed", tree.Executors)
	}
}

// FuzzMessagesRequest holds the Messages translation to its contract on
// any body: no panic, an accepted request has a message, every tool
// message answers a tool call of the assistant message before it.
func FuzzMessagesRequest(f *testing.F) {
	for _, s := range []string{`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":""},{"type":"tool_use","id":"a","name":"f","input":{"x":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]}]}`,
		`{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz"}]}]}`, `{"messages":[]}`, `{"max_tokens":1,"messages":[{"role":"user","content":[]}]}`} {
		f.Add([]byte(s))
	}
	g, err := New(Config{Mode: rollout.ModeMGRPO, Models: map[string]agents.Model{RolePlanner: &fakeModel{}, RoleExecutor: &fakeModel{}}})
	if err != nil {
		f.Fatal(err)
	}
	s := newSession("fuzz", "q", 1)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req messagesRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		c, err := g.messagesCall(s, RoleExecutor, req)
		if err != nil {
			return
		}
		if len(c.msgs) == 0 {
			t.Fatalf("%q: accepted with no message", body)
		}
		calls := map[string]bool{}
		for _, m := range c.msgs {
			switch m.Role {
			case "assistant":
				calls = map[string]bool{}
				for _, tc := range m.ToolCalls {
					calls[tc.ID] = true
				}
			case "tool":
				if !calls[m.ToolCallID] {
					t.Fatalf("%q: a tool message for %q answers no call", body, m.ToolCallID)
				}
			}
		}
	})
}
