package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
)

// sdkDelegateTool is a function tool as the OpenAI Agents SDK sends it:
// strict, with $schema and additionalProperties.
var sdkDelegateTool = map[string]any{"type": "function", "name": "delegate", "description": "hand off", "strict": true,
	"parameters": map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": false,
		"properties": map[string]any{"task": map[string]any{"type": "string"}}, "required": []string{"task"}}}

// TestResponsesTrajectory drives a planner the way the Agents SDK's
// default model does (stateless item lists, function_call items echoed,
// function_call_output items) and an executor through a
// previous_response_id chain and an item_reference: every call is a turn
// of one trajectory of its role, with the engine's tokens.
func TestResponsesTrajectory(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	pl, ex := o.BaseURLs[RolePlanner], o.BaseURLs[RoleExecutor]
	user := map[string]any{"role": "user", "content": o.Task.Question}
	status, first := post(t, pl+"/responses", map[string]any{"model": "planner", "instructions": "plan", "input": []any{user},
		"tools": []any{sdkDelegateTool}, "include": []string{}, "stream": false})
	if status != 200 || first["object"] != "response" || first["status"] != "completed" {
		t.Fatalf("first planner call: %d %v", status, first)
	}
	out := first["output"].([]any)
	if len(out) != 2 {
		t.Fatalf("output %v, want two function_call items", out)
	}
	for i, it := range out {
		fc := it.(map[string]any)
		if fc["type"] != "function_call" || fc["name"] != "delegate" || fc["call_id"] == "" || fc["id"] == "" {
			t.Errorf("output[%d] %v, want a function_call with id and call_id", i, fc)
		}
	}
	if u := first["usage"].(map[string]any); u["input_tokens"].(float64) != 6 || u["output_tokens"].(float64) != 3 {
		t.Errorf("usage %v, want the engine's 6 prompt and 3 completion tokens", u)
	}
	req := models[RolePlanner].requests()[0]
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != "plan" || req.Messages[1].Content != o.Task.Question ||
		len(req.Tools) != 1 || !req.Tools[0].Function.Strict {
		t.Errorf("the engine got %+v tools %+v, want instructions as system, the user message and the strict tool", req.Messages, req.Tools)
	}

	// The executor: a chain of two calls, the second by previous_response_id.
	status, r1 := post(t, ex+"/responses", map[string]any{"input": "Find A."})
	if status != 200 {
		t.Fatalf("executor call: %d %v", status, r1)
	}
	status, r2 := post(t, ex+"/responses", map[string]any{"previous_response_id": r1["id"], "input": []any{map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": "more"}}}}})
	if status != 200 {
		t.Fatalf("chained executor call: %d %v", status, r2)
	}
	exReqs := models[RoleExecutor].requests()
	if got := exReqs[1].Messages; len(got) != 3 || got[1].Content != "report on Find A." || got[2].Content != "more" {
		t.Errorf("the chained call reached the engine as %+v, want the first call, its answer and the new message", got)
	}
	// GET reads a stored response back; an item_reference names its message.
	resp, err := http.Get(ex + "/responses/" + r2["id"].(string))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stored response: %v %v", resp, err)
	}
	resp.Body.Close()
	msgID := r1["output"].([]any)[0].(map[string]any)["id"]
	status, r3 := post(t, ex+"/responses", map[string]any{"input": []any{map[string]any{"role": "user", "content": "Find A."},
		map[string]any{"type": "item_reference", "id": msgID}, map[string]any{"role": "user", "content": "more"},
		map[string]any{"type": "item_reference", "id": r2["output"].([]any)[0].(map[string]any)["id"]},
		map[string]any{"role": "user", "content": "again"}}})
	if status != 200 {
		t.Fatalf("item_reference call: %d %v", status, r3)
	}

	// The planner's second call echoes the function calls and their outputs.
	input := []any{user}
	for _, it := range out {
		input = append(input, it)
	}
	for _, it := range out {
		input = append(input, map[string]any{"type": "function_call_output", "call_id": it.(map[string]any)["call_id"], "output": "found"})
	}
	status, second := post(t, pl+"/responses", map[string]any{"instructions": "plan", "input": input, "tools": []any{sdkDelegateTool}})
	if status != 200 {
		t.Fatalf("second planner call: %d %v", status, second)
	}
	msg := second["output"].([]any)[0].(map[string]any)
	content := msg["content"].([]any)[0].(map[string]any)
	if msg["type"] != "message" || content["type"] != "output_text" || content["text"] != "<answer>42</answer>" {
		t.Errorf("answer %v, want a message with the engine's text", msg)
	}
	close(release)
	tree := <-done
	if len(tree.Planner.Turns) != 2 {
		t.Errorf("planner trajectory has %d turns, want both calls in one", len(tree.Planner.Turns))
	}
	if len(tree.Executors) != 1 || len(tree.Executors[0].Turns) != 3 {
		t.Errorf("%d executor trajectories (%+v), want one of three turns", len(tree.Executors), tree.Executors)
	}
	for i, turn := range tree.Planner.Turns {
		if len(turn.CompletionIDs) != 3 || len(turn.Logprobs) != 3 {
			t.Errorf("planner turn %d: %v %v, want the engine's ids and logprobs", i, turn.CompletionIDs, turn.Logprobs)
		}
	}
	// The rollout ended: its memory is gone.
	g.memory.mu.Lock()
	left := len(g.memory.by)
	g.memory.mu.Unlock()
	if left != 0 {
		t.Errorf("%d rollouts' memory kept after they ended, want none", left)
	}
}

// sseEvents reads a stream's events: each event line's name and its data.
func sseEvents(t *testing.T, url string, body any, header ...string) (int, []string, []map[string]any) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(data)))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var names []string
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(d), &ev); err != nil {
				t.Fatalf("event data %q: %v", d, err)
			}
			events = append(events, ev)
		}
	}
	return resp.StatusCode, names, events
}

// TestResponsesStream checks the streamed event sequence: named events
// whose data carries the same type, numbered in order, a function call's
// arguments and a message's text, ending with response.completed.
func TestResponsesStream(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{})
	o, release, done := startHeld(t, g)
	status, names, events := sseEvents(t, o.BaseURLs[RolePlanner]+"/responses", map[string]any{"input": "q", "tools": []any{sdkDelegateTool}, "stream": true})
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want %v", names, want)
	}
	for i, ev := range events {
		if ev["type"] != names[i] || ev["sequence_number"].(float64) != float64(i) {
			t.Errorf("event %d: %v, want type %s and sequence_number %d", i, ev, names[i], i)
		}
	}
	if d := events[3]["delta"]; d != `{"task":"Find A."}` {
		t.Errorf("arguments delta %v, want the engine's text", d)
	}
	status, names, events = sseEvents(t, o.BaseURLs[RoleExecutor]+"/responses", map[string]any{"input": "Find A.", "stream": true})
	want = []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if status != 200 || strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("text stream %d %v, want %v", status, names, want)
	}
	if len(events) == len(want) && events[4]["delta"] != "report on Find A." {
		t.Errorf("text delta %v", events[4])
	}
	close(release)
	<-done
}

// TestResponsesBadInput checks each refusal: 400 (404 for GET, 413 for
// an oversized body) in OpenAI's error shape naming the field, nothing
// forwarded to the engine, and the rollout's conversation before the
// refusals continues after them as the same trajectory.
func TestResponsesBadInput(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{})
	other, releaseOther, doneOther := startHeld(t, g)
	status, foreign := post(t, other.BaseURLs[RoleExecutor]+"/responses", map[string]any{"input": "x"})
	if status != 200 {
		t.Fatalf("other rollout's call: %d", status)
	}
	o, release, done := startHeld(t, g)
	ex := o.BaseURLs[RoleExecutor]
	status, first := post(t, ex+"/responses", map[string]any{"input": "Find A."})
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
	user := map[string]any{"role": "user", "content": "q"}
	for _, tc := range []struct {
		name, param string
		body        any
		// names is what the message must say when the refusal has no
		// param (the body did not decode).
		names string
	}{
		{"wrong input type", "input", map[string]any{"input": 5}, ""},
		{"wrong item field type", "input", map[string]any{"input": []any{map[string]any{"type": "function_call_output", "call_id": 5}}}, ""},
		{"wrong content type", "input[0].content", map[string]any{"input": []any{map[string]any{"role": "user", "content": 5}}}, ""},
		{"wrong instructions type", "instructions", map[string]any{"input": "x", "instructions": 5}, ""},
		{"wrong tools type", "", map[string]any{"input": "x", "tools": "search"}, "tools"},
		{"wrong max_output_tokens type", "", map[string]any{"input": "x", "max_output_tokens": "many"}, "max_output_tokens"},
		{"wrong stream type", "", map[string]any{"input": "x", "stream": "yes"}, "stream"},
		{"wrong previous_response_id type", "", map[string]any{"input": "x", "previous_response_id": 7}, "previous_response_id"},
		{"unknown item type", "input[0].type", map[string]any{"input": []any{map[string]any{"type": "web_search_call", "id": "ws"}}}, ""},
		{"unknown item type after a message", "input[1].type", map[string]any{"input": []any{user, map[string]any{"type": "computer_call", "id": "cc"}}}, ""},
		{"image part", "input[0].content[0].type", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image"}}}}}, ""},
		{"unknown previous response", "previous_response_id", map[string]any{"input": "x", "previous_response_id": "resp_nope"}, ""},
		{"another rollout's response", "previous_response_id", map[string]any{"input": "x", "previous_response_id": foreign["id"]}, ""},
		{"unknown item reference", "input[0].id", map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "msg_nope"}}}, ""},
		{"another rollout's item", "input[0].id", map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": foreign["output"].([]any)[0].(map[string]any)["id"]}}}, ""},
		{"output for an unknown call", "input[1].call_id", map[string]any{"input": []any{user,
			map[string]any{"type": "function_call_output", "call_id": "call_nope", "output": "x"}}}, ""},
		{"output for an earlier turn's call", "input[4].call_id", map[string]any{"input": []any{user,
			map[string]any{"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
			map[string]any{"type": "function_call_output", "call_id": "c1", "output": "x"},
			map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "done"}}},
			map[string]any{"type": "function_call_output", "call_id": "c1", "output": "again"}}}, ""},
		{"function_call without call_id", "input[1]", map[string]any{"input": []any{user, map[string]any{"type": "function_call", "name": "f", "arguments": "{}"}}}, ""},
		{"hosted tool", "tools[0]", map[string]any{"input": "x", "tools": []any{map[string]any{"type": "web_search"}}}, ""},
		{"structured output", "text.format.type", map[string]any{"input": "x", "text": map[string]any{"format": map[string]any{"type": "json_schema"}}}, ""},
		{"tool choice", "tool_choice", map[string]any{"input": "x", "tool_choice": "required"}, ""},
		{"no parallel calls", "parallel_tool_calls", map[string]any{"input": "x", "parallel_tool_calls": false}, ""},
		{"background", "background", map[string]any{"input": "x", "background": true}, ""},
		{"no input", "input", map[string]any{}, ""},
		{"bad role", "input[0].role", map[string]any{"input": []any{map[string]any{"role": "robot", "content": "x"}}}, ""},
		{"not json", "", "{", "request body"},
	} {
		status, body := post(t, ex+"/responses", tc.body)
		if status != 400 {
			t.Errorf("%s: %d %v, want 400", tc.name, status, body)
			continue
		}
		errorCode(t, body)
		e := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if p, _ := e["param"].(string); p != tc.param {
			t.Errorf("%s: param %v (%v), want %q", tc.name, e["param"], msg, tc.param)
		}
		if !strings.Contains(msg, tc.names) {
			t.Errorf("%s: message %q does not name %q", tc.name, msg, tc.names)
		}
	}
	// The executor's stored response is not the planner's to continue.
	if status, body := post(t, o.BaseURLs[RolePlanner]+"/responses", map[string]any{"input": "x", "previous_response_id": first["id"]}); status != 400 {
		t.Errorf("another role's response: %d %v, want 400", status, body)
	} else if e := body["error"].(map[string]any); e["param"] != "previous_response_id" {
		t.Errorf("another role's response: param %v", e["param"])
	}
	big := map[string]any{"input": strings.Repeat("x", 2<<20)}
	if status, body := post(t, ex+"/responses", big); status != 413 {
		t.Errorf("oversized body: %d %v, want 413", status, body)
	} else {
		errorCode(t, body)
	}
	for _, id := range []string{foreign["id"].(string), "resp_nope"} {
		resp, err := http.Get(ex + "/responses/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("GET response %s: %d, want 404", id, resp.StatusCode)
		} else {
			errorCode(t, body)
		}
	}
	if n := engineCalls() - before; n != 0 {
		t.Errorf("%d calls forwarded for refused requests, want none", n)
	}
	if status, body := post(t, ex+"/responses", map[string]any{"input": "And B?", "previous_response_id": first["id"]}); status != 200 {
		t.Errorf("the rollout's next call after the refusals: %d %v, want 200", status, body)
	}
	close(release)
	close(releaseOther)
	tree := <-done
	<-doneOther
	if len(tree.Executors) != 1 || tree.Executors[0].Error != "" || len(tree.Executors[0].Turns) != 2 {
		t.Errorf("executors %+v, want the conversation's one trajectory of two turns, unharmed", tree.Executors)
	}
}

// FuzzResponsesRequest holds the Responses translation to its contract on
// any body: no panic, an accepted request is at least one message of a
// known role, and every tool message answers a call of the assistant
// message before it.
func FuzzResponsesRequest(f *testing.F) {
	for _, s := range []string{`{"input":"hi"}`, `{"input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"input":[{"type":"reasoning","id":"rs","summary":[],"content":[{"type":"reasoning_text","text":"t"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}]}`,
		`{"input":[{"type":"item_reference","id":"x"}]}`, `{"input":5}`, `{"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"zz","output":"o"}]}`, `{"instructions":"s","input":[],"tools":[{"type":"function","name":"f","parameters":{}}]}`, `{}`, `null`} {
		f.Add([]byte(s))
	}
	g, err := New(Config{Mode: rollout.ModeMGRPO, Models: map[string]agents.Model{RolePlanner: &fakeModel{}, RoleExecutor: &fakeModel{}}})
	if err != nil {
		f.Fatal(err)
	}
	s := newSession("fuzz", "q", 1)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req responsesRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		c, _, err := g.responsesCall(s, RoleExecutor, req)
		if err != nil {
			return
		}
		if len(c.msgs) == 0 {
			t.Fatalf("%q: accepted with no message", body)
		}
		calls := map[string]bool{}
		for _, m := range c.msgs {
			switch m.Role {
			case "system", "user":
			case "assistant":
				calls = map[string]bool{}
				for _, tc := range m.ToolCalls {
					calls[tc.ID] = true
				}
			case "tool":
				if !calls[m.ToolCallID] {
					t.Fatalf("%q: a tool message for %q answers no call", body, m.ToolCallID)
				}
			default:
				t.Fatalf("%q: a message of role %q", body, m.Role)
			}
		}
	})
}
