package llm

import (
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// history is a conversation with one tool-calling assistant turn whose
// re-rendering each template behaviour changes.
func history() []Message {
	return []Message{
		{Role: "system", Content: "  You research.\n"},
		{Role: "user", Content: "Who founded Velmora Labs? "},
		{Role: "assistant", Reasoning: "I search.", Content: "\n\n", ToolCalls: []policy.ToolCall{
			{Name: "search", Arguments: `{"query":"Velmora Labs","k":3}`},
			{Name: "visit", Arguments: `{"url":["a"]}`}}},
		{Role: "tool", Content: "result one\n"},
		{Role: "tool", Content: "result two"},
	}
}

// TestTemplateBehaviours renders the same history with each behaviour and
// checks what each changes, and that nothing else changes.
func TestTemplateBehaviours(t *testing.T) {
	base, err := Template{}.Render(history(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	sampled := RenderAssistant(policy.Output{Reasoning: "I search.", Content: "\n\n", ToolCalls: history()[2].ToolCalls})
	if !strings.Contains(base, IMStart+"assistant\n"+sampled+IMEnd) {
		t.Fatalf("default template does not render the assistant turn as sampled:\n%s", base)
	}
	for _, tc := range []struct {
		name     string
		tmpl     Template
		has, not []string
	}{
		{"strip reasoning", Template{StripReasoning: true},
			[]string{IMStart + "assistant\n\n\n\n" + ToolCallOpen}, []string{"I search."}},
		{"merge tool results", Template{MergeToolResults: true},
			[]string{IMStart + "user\n" + ToolResponseOpen + "\nresult one\n\n" + ToolResponseClose + "\n" + ToolResponseOpen + "\nresult two\n" + ToolResponseClose + IMEnd + "\n" + IMStart + "assistant\n"},
			[]string{IMStart + "tool\n"}},
		{"canonical tool args", Template{CanonicalToolArgs: true},
			[]string{`"arguments": {"k": 3, "query": "Velmora Labs"}}`, `"arguments": {"url": ["a"]}}`}, []string{`{"query":"Velmora Labs","k":3}`}},
		{"trim content", Template{TrimContent: true},
			[]string{IMStart + "system\nYou research." + IMEnd, "Velmora Labs?" + IMEnd, ThinkClose + "\n\n" + ToolCallOpen, "result one" + IMEnd},
			[]string{"  You research.", "Labs? " + IMEnd}},
	} {
		got, err := tc.tmpl.Render(history(), nil, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got == base {
			t.Errorf("%s: renders like the default template", tc.name)
		}
		for _, s := range tc.has {
			if !strings.Contains(got, s) {
				t.Errorf("%s: missing %q in\n%s", tc.name, s, got)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(got, s) {
				t.Errorf("%s: still has %q in\n%s", tc.name, s, got)
			}
		}
		// The server must still read its own prompts back (raw prompts on
		// /v1/completions and the tokens routes).
		msgs, _, err := ParsePrompt(got)
		if err != nil {
			t.Fatalf("%s: ParsePrompt: %v", tc.name, err)
		}
		if n := len(msgs); n != 5 || msgs[3].Role != "tool" || msgs[4].Role != "tool" || len(msgs[2].ToolCalls) != 2 {
			t.Errorf("%s: ParsePrompt read %d messages %+v", tc.name, n, msgs)
		}
	}
	// A user turn that only looks like merged results stays a user turn.
	msgs, _, _ := ParsePrompt(IMStart + "user\n" + ToolResponseOpen + "\nx" + IMEnd + "\n")
	if len(msgs) != 1 || msgs[0].Role != "user" {
		t.Errorf("unclosed tool_response read as %+v", msgs)
	}
}

func TestCanonicalJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":{"y":[1,2.50,"é<"],"x":null}}`: `{"a": {"x": null, "y": [1, 2.50, "é<"]}, "b": 1}`,
		`{ "a" : true }`: `{"a": true}`,
		`{"a":`:          `{"a":`, // malformed stays malformed
		`{} {}`:          `{} {}`,
	} {
		if got := canonicalJSON(in); got != want {
			t.Errorf("canonicalJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestTemplateBehavioursOnServer checks the server's routes honour the
// configured behaviours: /tokenize and the render route give the same ids,
// and turning a behaviour on changes them.
func TestTemplateBehavioursOnServer(t *testing.T) {
	wire := []map[string]any{
		{"role": "user", "content": question},
		{"role": "assistant", "content": "", "reasoning": "think", "tool_calls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "search", "arguments": `{"query":"q"}`}}}},
		{"role": "tool", "tool_call_id": "c1", "content": "r1"},
		{"role": "tool", "tool_call_id": "c1", "content": "r2"},
	}
	text := func(cfg Config) string {
		s, ts := MustServer(t, cfg)
		ids := render(t, ts.URL, wire, researchTools)
		var tk struct {
			Tokens []int `json:"tokens"`
		}
		st, _, b := post(t, ts.URL+"/tokenize", map[string]any{"messages": wire, "tools": researchTools})
		decodeOK(t, st, b, &tk)
		if string(mustMarshal(t, tk.Tokens)) != string(mustMarshal(t, ids)) {
			t.Errorf("render and /tokenize differ")
		}
		out, _ := s.Tokenizer().Decode(ids)
		return out
	}
	base := text(testConfig(DialectVLLM))
	for name, set := range map[string]func(*Config){
		"merge":     func(c *Config) { c.MergeToolResults = true },
		"canonical": func(c *Config) { c.CanonicalToolArgs = true },
		"strip":     func(c *Config) { c.StripReasoning = true },
	} {
		cfg := testConfig(DialectVLLM)
		set(&cfg)
		if text(cfg) == base {
			t.Errorf("%s: the server renders as without it", name)
		}
	}
}

// TestStrictReasoningInput checks that with StrictReasoningInput the server
// reads an assistant message's reasoning only from the field its version
// writes, so reasoning sent in the other field is dropped from the prompt.
func TestStrictReasoningInput(t *testing.T) {
	msg := func(field string) []map[string]any {
		return []map[string]any{{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", field: "THOUGHT"}, {"role": "user", "content": "more"}}
	}
	for _, tc := range []struct {
		dialect       string
		legacy        bool
		reads, ignore string
	}{
		{DialectVLLM, false, "reasoning", "reasoning_content"},
		{DialectVLLM, true, "reasoning_content", "reasoning"},
		{DialectSGLang, false, "reasoning_content", "reasoning"},
	} {
		for _, strict := range []bool{false, true} {
			cfg := testConfig(tc.dialect)
			cfg.ReasoningContent, cfg.StrictReasoningInput = tc.legacy, strict
			s, ts := MustServer(t, cfg)
			path := "/tokenize"
			if tc.dialect == DialectSGLang {
				path = "/v1/tokenize"
			}
			for field, want := range map[string]bool{tc.reads: true, tc.ignore: !strict} {
				var tk struct {
					Tokens []int `json:"tokens"`
				}
				st, _, b := post(t, ts.URL+path, map[string]any{"messages": msg(field)})
				decodeOK(t, st, b, &tk)
				text, _ := s.Tokenizer().Decode(tk.Tokens)
				if got := strings.Contains(text, "THOUGHT"); got != want {
					t.Errorf("%s legacy %v strict %v: reasoning in %s rendered %v, want %v", tc.dialect, tc.legacy, strict, field, got, want)
				}
			}
		}
	}
}

// TestStripReasoningBeforeLastQuery checks Qwen3's rule: reasoning stays on
// the turns answering the current query and goes once a new user message
// follows them.
func TestStripReasoningBeforeLastQuery(t *testing.T) {
	tp := Template{StripReasoningBeforeLastQuery: true}
	within, err := tp.Render(history(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Template{}.Render(history(), nil, true)
	if within != base {
		t.Errorf("within the query: want the reasoning kept, as without the rule")
	}
	later := append(history(), Message{Role: "assistant", Reasoning: "Now I answer.", Content: "Ada."}, Message{Role: "user", Content: "Where?"},
		Message{Role: "assistant", Reasoning: "Second query.", Content: "", ToolCalls: []policy.ToolCall{{Name: "search", Arguments: `{}`}}})
	got, err := tp.Render(later, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "I search.") || strings.Contains(got, "Now I answer.") || !strings.Contains(got, "Second query.") {
		t.Errorf("after a new user message: want the earlier reasoning dropped and the current kept:\n%s", got)
	}
}
