package realtemplate

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

var tools = []map[string]any{{"type": "function", "function": map[string]any{"name": "search", "description": "Search the web.",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}}}}}

type msg = map[string]any

func call(t *testing.T, e *Engine, path string, body any, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(e.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("POST %s: %v: %s", path, err, raw)
	}
}

func renderIDs(t *testing.T, e *Engine, msgs []msg, addGen bool) []int {
	t.Helper()
	var r struct {
		TokenIDs []int `json:"token_ids"`
	}
	call(t, e, "/v1/chat/completions/render", map[string]any{"model": e.Model, "messages": msgs, "tools": tools, "add_generation_prompt": addGen}, &r)
	return r.TokenIDs
}

func detok(t *testing.T, e *Engine, ids []int) string {
	t.Helper()
	var r struct {
		Prompt string `json:"prompt"`
	}
	call(t, e, "/detokenize", map[string]any{"tokens": ids}, &r)
	return r.Prompt
}

type chatResp struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
		TokenIDs     []int  `json:"token_ids"`
		Logprobs     struct {
			Content []struct {
				Logprob float64 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	PromptTokenIDs []int `json:"prompt_token_ids"`
}

func chat(t *testing.T, e *Engine, msgs []msg) chatResp {
	t.Helper()
	var r chatResp
	call(t, e, "/v1/chat/completions", map[string]any{"model": e.Model, "messages": msgs, "tools": tools, "return_token_ids": true, "logprobs": true}, &r)
	return r
}

// echo is the assistant message an agent sends back: the chat route's
// message as returned, reasoning in field.
func echo(r chatResp, field string) msg {
	m := r.Choices[0].Message
	out := msg{"role": "assistant", "content": m.Content}
	if m.Reasoning != nil && field != "" {
		out[field] = *m.Reasoning
	}
	var calls []msg
	for _, c := range m.ToolCalls {
		calls = append(calls, msg{"id": c.ID, "type": "function", "function": msg{"name": c.Function.Name, "arguments": c.Function.Arguments}})
	}
	if calls != nil {
		out["tool_calls"] = calls
	}
	return out
}

func toolResult(r chatResp, text string) msg {
	return msg{"role": "tool", "tool_call_id": r.Choices[0].Message.ToolCalls[0].ID, "content": text}
}

// firstDiff is where a and b first differ.
func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

var first = []msg{{"role": "system", "content": "You research."}, {"role": "user", "content": "Who founded Velmora Labs?"}}

// TestFirstTurnRenderIsChatPrompt checks the render route, /tokenize and
// the chat route agree on a first turn's prompt ids, that the tokens route
// samples from those ids what the chat route samples, and that the engine's
// log holds exactly the ids and logprobs the routes returned.
func TestFirstTurnRenderIsChatPrompt(t *testing.T) {
	e := Start(t, Options{})
	ids := renderIDs(t, e, first, true)
	var tk struct {
		Tokens []int `json:"tokens"`
	}
	call(t, e, "/tokenize", map[string]any{"messages": first, "tools": tools}, &tk)
	c := chat(t, e, first)
	if !slices.Equal(ids, c.PromptTokenIDs) || !slices.Equal(ids, tk.Tokens) {
		t.Fatalf("render %d ids, /tokenize %d, chat prompt %d: they differ", len(ids), len(tk.Tokens), len(c.PromptTokenIDs))
	}
	if text := detok(t, e, ids); !strings.HasPrefix(text, "<|im_start|>system\nYou research.\n\n# Tools") || !strings.HasSuffix(text, "<|im_start|>user\nWho founded Velmora Labs?<|im_end|>\n<|im_start|>assistant\n") {
		t.Errorf("not Qwen3's rendering:\n%s", text)
	}
	var g struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
			Logprobs struct {
				Content []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	call(t, e, "/inference/v1/generate", map[string]any{"token_ids": ids, "sampling_params": map[string]any{"logprobs": 0}}, &g)
	if !slices.Equal(g.Choices[0].TokenIDs, c.Choices[0].TokenIDs) {
		t.Fatalf("tokens route sampled other ids than the chat route")
	}
	m := c.Choices[0].Message
	if m.Reasoning == nil || m.Content == nil || *m.Content != "\n\n" || len(m.ToolCalls) != 1 || c.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("want vLLM's qwen3 + hermes parse (reasoning, content \"\\n\\n\", one call): %+v", m)
	}
	log := e.Log(t)
	if len(log) != 2 {
		t.Fatalf("log has %d generations, want 2", len(log))
	}
	for i, entry := range log {
		if !slices.Equal(entry.PromptIDs, ids) || !slices.Equal(entry.IDs, g.Choices[0].TokenIDs) {
			t.Errorf("log[%d]: prompt or sampled ids differ from the routes'", i)
		}
	}
	for i, lp := range g.Choices[0].Logprobs.Content {
		if lp.Logprob != log[0].Logprobs[i] || lp.Logprob != c.Choices[0].Logprobs.Content[i].Logprob {
			t.Fatalf("logprob %d: tokens route %v, chat route %v, log %v", i, lp.Logprob, c.Choices[0].Logprobs.Content[i].Logprob, log[0].Logprobs[i])
		}
	}
}

// TestClassicRerenderBreaksPrefix documents the problem the token path
// solves: on Qwen3's real template, re-sending the messages does not give
// a prompt that extends the previous prompt and completion.
func TestClassicRerenderBreaksPrefix(t *testing.T) {
	e := Start(t, Options{})
	c1 := chat(t, e, first)
	seq := append(slices.Clone(c1.PromptTokenIDs), c1.Choices[0].TokenIDs...)
	extends := func(next []msg) (bool, string) {
		c2 := chat(t, e, next)
		p := c2.PromptTokenIDs
		if len(p) > len(seq) && slices.Equal(p[:len(seq)], seq) {
			return true, ""
		}
		d := firstDiff(p, seq)
		return false, detok(t, e, p[max(d-4, 0):min(d+8, len(p))])
	}

	// 1. The message echoed as the chat route returned it: content "\n\n"
	// makes the template put a newline before <tool_call>, which the model
	// did not sample.
	ok, at := extends(append(slices.Clone(first), echo(c1, "reasoning"), toolResult(c1, "Ada Quill founded it.")))
	if ok {
		t.Errorf("echoed content \"\\n\\n\": the next prompt extends prompt + completion; Qwen3's template was expected to add a newline")
	} else if !strings.Contains(at, "</think>\n\n\n<tool_call>") {
		t.Errorf("echoed content: want the break at an extra newline before <tool_call>, got %q", at)
	}

	// 2. Reasoning sent in reasoning_content to a server that reads
	// reasoning (current vLLM): the think block is dropped.
	m := echo(c1, "reasoning_content")
	m["content"] = nil
	ok, at = extends(append(slices.Clone(first), m, toolResult(c1, "Ada Quill founded it.")))
	if ok || strings.Contains(at, "<think>") {
		t.Errorf("reasoning in reasoning_content: extends %v at %q; want the think block dropped", ok, at)
	}

	// 3. Reasoning in the field the server reads and whitespace-only
	// content sent as empty: within one user query the template is
	// append-only, so the classic path holds here.
	m = echo(c1, "reasoning")
	m["content"] = ""
	if ok, at = extends(append(slices.Clone(first), m, toolResult(c1, "Ada Quill founded it."))); !ok {
		t.Errorf("reasoning sent back and content empty: want the prefix kept, broke at %q", at)
	}

	// 4. After a new user message every earlier think block is dropped,
	// whatever the client sends.
	ok, _ = extends(append(slices.Clone(first), m, toolResult(c1, "Ada Quill founded it."), msg{"role": "user", "content": "And where was she born?"}))
	if ok {
		t.Errorf("new user message: the earlier reasoning was kept; Qwen3's template drops it")
	}
}

// TestRenderDifference checks rendering only the new messages, as the
// difference of a fixed short conversation rendered with and without them:
// appended to the previous prompt and completion (and the template's
// newline after <|im_end|>), it gives the full render where the template is
// append-only (tool results within a query), and shows where it is not.
func TestRenderDifference(t *testing.T) {
	e := Start(t, Options{})
	var g struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
	}
	p1 := renderIDs(t, e, first, true)
	call(t, e, "/inference/v1/generate", map[string]any{"token_ids": p1, "sampling_params": map[string]any{}}, &g)
	c1 := slices.Clone(g.Choices[0].TokenIDs)
	var d chatResp
	call(t, e, "/v1/chat/completions/derender", map[string]any{"model": e.Model, "generate_response": g, "chat_request": map[string]any{"messages": first, "tools": tools}}, &d)
	if len(d.Choices) != 1 || len(d.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("derender: want one tool call: %+v", d)
	}
	asst := echo(d, "reasoning")
	asst["content"] = ""
	results := []msg{{"role": "tool", "tool_call_id": "x", "content": "Ada Quill founded it."}, {"role": "tool", "tool_call_id": "y", "content": "She was born in Tarsk."}}

	// delta renders fixed with and without news and returns the ids news
	// add, or ok false when the shorter render is not a prefix.
	delta := func(fixed, news []msg) ([]int, bool) {
		a := renderIDs(t, e, fixed, false)
		b := renderIDs(t, e, append(slices.Clone(fixed), news...), true)
		if len(b) < len(a) || !slices.Equal(b[:len(a)], a) {
			return nil, false
		}
		return b[len(a):], true
	}
	var nl struct {
		Tokens []int `json:"tokens"`
	}
	call(t, e, "/tokenize", map[string]any{"prompt": "\n"}, &nl)
	withAssistant := []msg{{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "reasoning": "r"}}

	// Tool results after a fixed assistant turn with reasoning: the
	// template is append-only there.
	dt, ok := delta(withAssistant, results)
	if !ok {
		t.Fatal("tool results: the fixed conversation's render is not a prefix of its render with them")
	}
	p2 := slices.Concat(p1, c1, nl.Tokens, dt)
	full := renderIDs(t, e, append(slices.Clone(first), asst, results[0], results[1]), true)
	if !slices.Equal(p2, full) {
		dd := firstDiff(p2, full)
		t.Fatalf("tool results: prompt + completion + difference differs from the full render at %d: %q vs %q", dd, detok(t, e, p2[dd:min(dd+10, len(p2))]), detok(t, e, full[dd:min(dd+10, len(full))]))
	}

	// A new user message after that fixed conversation is not append-only:
	// the fixed assistant's reasoning is dropped once a later query exists.
	user := []msg{{"role": "user", "content": "And where was she born?"}}
	if _, ok := delta(withAssistant, user); ok {
		t.Error("new user message after an assistant turn with reasoning: the template was expected to drop that reasoning")
	}
	// A fixed conversation without an assistant turn gives the user
	// message's ids; the token sequence then keeps the reasoning the model
	// saw, which the full re-render drops.
	du, ok := delta([]msg{{"role": "user", "content": "x"}}, user)
	if !ok {
		t.Fatal("new user message after a user turn: not a prefix")
	}
	if text := detok(t, e, du); text != "<|im_start|>user\nAnd where was she born?<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("user message difference = %q", text)
	}
	call(t, e, "/inference/v1/generate", map[string]any{"token_ids": p2, "sampling_params": map[string]any{}}, &g)
	p3 := slices.Concat(p2, g.Choices[0].TokenIDs, nl.Tokens, du)
	call(t, e, "/v1/chat/completions/derender", map[string]any{"model": e.Model, "generate_response": g, "chat_request": map[string]any{"tools": tools}}, &d)
	final := echo(d, "reasoning")
	rerender := renderIDs(t, e, append(slices.Clone(first), asst, results[0], results[1], final, user[0]), true)
	if slices.Equal(p3, rerender) {
		t.Error("after a new user message the full re-render was expected to drop the earlier think blocks")
	}
	if !strings.Contains(detok(t, e, p3), "Round 1:") || strings.Contains(detok(t, e, rerender), "Round 1:") {
		t.Error("want the token sequence to keep the first turn's reasoning and the re-render to drop it")
	}
	// Every generation's prompt is the sequence built here.
	log := e.Log(t)
	if len(log) != 2 || !slices.Equal(log[0].PromptIDs, p1) || !slices.Equal(log[1].PromptIDs, p2) || !slices.Equal(log[0].IDs, c1) {
		t.Errorf("log: %d generations; the prompts are not the sequence built from the sampled ids", len(log))
	}
}

// TestStreamAndOlderServer checks the streamed tokens route sends the ids
// the unstreamed one samples, and that an engine shaped as an older vLLM
// lacks the render and generate routes but serves the fallback: /tokenize
// with messages and /v1/completions with a token-id prompt, which samples
// what the tokens route would.
func TestStreamAndOlderServer(t *testing.T) {
	e := Start(t, Options{})
	ids := renderIDs(t, e, first, true)
	var whole struct {
		Choices []struct {
			TokenIDs []int `json:"token_ids"`
		} `json:"choices"`
	}
	call(t, e, "/inference/v1/generate", map[string]any{"token_ids": ids, "sampling_params": map[string]any{}}, &whole)
	b, _ := json.Marshal(map[string]any{"token_ids": ids, "stream": true, "stream_options": map[string]any{"include_usage": true}, "sampling_params": map[string]any{"logprobs": 1}})
	resp, err := http.Post(e.URL+"/inference/v1/generate", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got []int
	events := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	if events[len(events)-1] != "data: [DONE]" || !strings.Contains(events[len(events)-2], `"usage"`) {
		t.Fatalf("want usage then [DONE] at the end: %s", raw)
	}
	for _, ev := range events[:len(events)-2] {
		var c struct {
			Choices []struct {
				TokenIDs []int `json:"token_ids"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			t.Fatalf("%v: %s", err, ev)
		}
		got = append(got, c.Choices[0].TokenIDs...)
	}
	if !slices.Equal(got, whole.Choices[0].TokenIDs) {
		t.Errorf("streamed ids differ from the unstreamed ones")
	}

	old := Start(t, Options{DisableRoutes: "render,generate,derender"})
	for _, path := range []string{"/v1/chat/completions/render", "/inference/v1/generate", "/v1/chat/completions/derender"} {
		resp, err := http.Post(old.URL+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("older engine: %s answered %d, want 404", path, resp.StatusCode)
		}
	}
	var tk struct {
		Tokens []int `json:"tokens"`
	}
	call(t, old, "/tokenize", map[string]any{"messages": first, "tools": tools}, &tk)
	var cmpl struct {
		Choices []struct {
			TokenIDs       []int `json:"token_ids"`
			PromptTokenIDs []int `json:"prompt_token_ids"`
		} `json:"choices"`
	}
	call(t, old, "/v1/completions", map[string]any{"prompt": tk.Tokens, "max_tokens": 1000, "return_token_ids": true}, &cmpl)
	if !slices.Equal(tk.Tokens, ids) || !slices.Equal(cmpl.Choices[0].PromptTokenIDs, ids) || !slices.Equal(cmpl.Choices[0].TokenIDs, whole.Choices[0].TokenIDs) {
		t.Errorf("older engine's /tokenize + /v1/completions differ from render + generate")
	}
}

// TestChatStream checks the streamed chat route carries the unstreamed
// route's ids one per chunk and splits them into the same reasoning,
// content and tool call.
func TestChatStream(t *testing.T) {
	e := Start(t, Options{})
	whole := chat(t, e, first)
	b, _ := json.Marshal(map[string]any{"model": e.Model, "messages": first, "tools": tools, "stream": true, "return_token_ids": true, "logprobs": true})
	resp, err := http.Post(e.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ids, prompt []int
	var reasoning, content, finish string
	var calls []string
	n := 0
	for _, ev := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		data := strings.TrimPrefix(ev, "data: ")
		if data == "[DONE]" {
			continue
		}
		var c struct {
			PromptTokenIDs []int `json:"prompt_token_ids"`
			Choices        []struct {
				Delta struct {
					Reasoning string `json:"reasoning"`
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				TokenIDs     []int   `json:"token_ids"`
				FinishReason *string `json:"finish_reason"`
				Logprobs     *struct {
					Content []struct {
						Logprob float64 `json:"logprob"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		prompt = append(prompt, c.PromptTokenIDs...)
		ch := c.Choices[0]
		ids = append(ids, ch.TokenIDs...)
		reasoning += ch.Delta.Reasoning
		content += ch.Delta.Content
		for _, tc := range ch.Delta.ToolCalls {
			calls = append(calls, tc.Function.Name+" "+tc.Function.Arguments)
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
		if ch.Logprobs != nil {
			if lp := ch.Logprobs.Content[0].Logprob; lp != whole.Choices[0].Logprobs.Content[n].Logprob {
				t.Fatalf("chunk %d logprob %v, unstreamed %v", n, lp, whole.Choices[0].Logprobs.Content[n].Logprob)
			}
			n++
		}
	}
	m := whole.Choices[0].Message
	if !slices.Equal(ids, whole.Choices[0].TokenIDs) || !slices.Equal(prompt, whole.PromptTokenIDs) {
		t.Fatalf("streamed ids differ from the unstreamed route's")
	}
	if reasoning != *m.Reasoning || content != *m.Content || finish != "tool_calls" || len(calls) != 1 ||
		calls[0] != m.ToolCalls[0].Function.Name+" "+m.ToolCalls[0].Function.Arguments {
		t.Errorf("stream parsed reasoning %q content %q calls %v finish %q; unstreamed %+v", reasoning, content, calls, finish, m)
	}
}

// TestOlderReasoningField checks an engine shaped as an older vLLM answers
// reasoning in reasoning_content and reads it from there: sent back in that
// field, the think block is rendered; in reasoning, it is dropped.
func TestOlderReasoningField(t *testing.T) {
	e := Start(t, Options{ReasoningInput: "reasoning_content"})
	var r struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	call(t, e, "/v1/chat/completions", map[string]any{"messages": first, "tools": tools}, &r)
	reasoning, ok := r.Choices[0].Message["reasoning_content"].(string)
	if _, has := r.Choices[0].Message["reasoning"]; has || !ok || reasoning == "" {
		t.Fatalf("want reasoning in reasoning_content only: %v", r.Choices[0].Message)
	}
	for field, kept := range map[string]bool{"reasoning_content": true, "reasoning": false} {
		msgs := append(slices.Clone(first), msg{"role": "assistant", "content": "", field: reasoning,
			"tool_calls": []msg{{"id": "c", "type": "function", "function": msg{"name": "search", "arguments": `{"query": "q"}`}}}},
			msg{"role": "tool", "tool_call_id": "c", "content": "r"})
		if got := strings.Contains(detok(t, e, renderIDs(t, e, msgs, true)), reasoning); got != kept {
			t.Errorf("reasoning sent in %s: rendered %v, want %v", field, got, kept)
		}
	}
}
