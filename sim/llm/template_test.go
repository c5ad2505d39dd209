package llm

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

var testTools = []policy.Tool{
	{Name: "search", Description: "Search the web.", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"array","items":{"type":"string"}}},"required":["query"]}`)},
	{Name: "visit", Description: "Visit pages.", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"array","items":{"type":"string"}},"goal":{"type":"string"}}}`)},
}

func TestRenderLayout(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "You are helpful."},
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Reasoning: "greet", Content: "Hello", ToolCalls: []policy.ToolCall{{Name: "search", Arguments: `{"query": ["x"]}`}}},
		{Role: "tool", Content: "1. result"},
	}
	got, err := Template{}.Render(msgs, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nYou are helpful.<|im_end|>\n" +
		"<|im_start|>user\nHi<|im_end|>\n" +
		"<|im_start|>assistant\n<think>\ngreet\n</think>\n\nHello\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": [\"x\"]}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>tool\n1. result<|im_end|>\n" +
		"<|im_start|>assistant\n"
	if got != want {
		t.Errorf("Render:\n got %q\nwant %q", got, want)
	}
	if _, err := (Template{}).Render([]Message{{Role: "robot"}}, nil, false); err == nil {
		t.Errorf("unknown role rendered without error")
	}
}

func TestParseAssistant(t *testing.T) {
	call := policy.ToolCall{Name: "search", Arguments: `{"query": ["a b"]}`}
	tests := []struct {
		name                   string
		out                    policy.Output
		reasoningP, toolP      bool
		wantR, wantC           string
		wantCalls              []policy.ToolCall
		contentIsWholeResponse bool
	}{
		{name: "plain", out: policy.Output{Content: "Hello"}, reasoningP: true, toolP: true, wantC: "Hello"},
		{name: "reasoning split", out: policy.Output{Reasoning: "r", Content: "c"}, reasoningP: true, toolP: true, wantR: "r", wantC: "c"},
		{name: "reasoning kept without parser", out: policy.Output{Reasoning: "r", Content: "c"}, toolP: true, contentIsWholeResponse: true},
		{name: "two calls", out: policy.Output{ToolCalls: []policy.ToolCall{call, call}}, reasoningP: true, toolP: true, wantCalls: []policy.ToolCall{call, call}},
		{name: "content and call", out: policy.Output{Content: "Let me look.", ToolCalls: []policy.ToolCall{call}}, reasoningP: true, toolP: true, wantC: "Let me look.", wantCalls: []policy.ToolCall{call}},
		{name: "tool parser off", out: policy.Output{ToolCalls: []policy.ToolCall{call}}, reasoningP: true, contentIsWholeResponse: true},
		{name: "malformed call stays text", out: policy.Output{Content: "x", ToolCalls: []policy.ToolCall{call, {Name: "visit", Arguments: `{"url": [`}}}, reasoningP: true, toolP: true, contentIsWholeResponse: true},
		{name: "arguments not an object", out: policy.Output{ToolCalls: []policy.ToolCall{{Name: "visit", Arguments: `"u"`}}}, reasoningP: true, toolP: true, contentIsWholeResponse: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := RenderAssistant(tt.out)
			r, c, calls := ParseAssistant(text, tt.reasoningP, tt.toolP)
			if tt.contentIsWholeResponse {
				tt.wantC = text
				if tt.reasoningP && tt.out.Reasoning != "" {
					tt.wantR = tt.out.Reasoning
					_, tt.wantC, _ = ParseAssistant(text, true, false)
				}
			}
			if r != tt.wantR || c != tt.wantC {
				t.Errorf("ParseAssistant(%q) reasoning, content = %q, %q; want %q, %q", text, r, c, tt.wantR, tt.wantC)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			// Whatever the parsers made of it, replaying the parts renders
			// the generated text again.
			if again := RenderAssistant(policy.Output{Reasoning: r, Content: c, ToolCalls: calls}); again != text {
				t.Errorf("replayed %q, generated %q", again, text)
			}
		})
	}
}

func TestParsePromptInvertsRender(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "What is the founder of Velmora Labs?"},
		{Role: "assistant", Reasoning: "search it", ToolCalls: []policy.ToolCall{{Name: "search", Arguments: `{"query": ["Velmora Labs founder"]}`}}},
		{Role: "tool", Content: "The founder of Velmora Labs is Ida Kestrel."},
	}
	text, err := Template{}.Render(msgs, testTools, true)
	if err != nil {
		t.Fatal(err)
	}
	gotMsgs, gotTools, err := ParsePrompt(text)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msgs, gotMsgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	wantTools := []policy.Tool{}
	for _, tool := range testTools {
		var compact json.RawMessage
		compact, _ = json.Marshal(tool.Parameters)
		wantTools = append(wantTools, policy.Tool{Name: tool.Name, Description: tool.Description, Parameters: compact})
	}
	if diff := cmp.Diff(wantTools, gotTools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	plain, _, err := ParsePrompt("Once upon a time")
	if err != nil || len(plain) != 1 || plain[0].Role != "user" {
		t.Errorf("plain prompt = %v, %v; want one user message", plain, err)
	}
}

// genOutput draws an assistant turn the way the simulated model writes one:
// text never starts with whitespace, arguments are JSON objects.
func genOutput(t *rapid.T) policy.Output {
	word := rapid.StringMatching(`[A-Za-z][A-Za-z0-9 ,.?!'"-]{0,30}`)
	out := policy.Output{}
	if rapid.Bool().Draw(t, "reasoning") {
		out.Reasoning = word.Draw(t, "reasoningText")
	}
	if rapid.Bool().Draw(t, "content") {
		out.Content = word.Draw(t, "contentText")
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "calls") {
		args, _ := json.Marshal(map[string]any{"query": []string{word.Draw(t, "arg")}, "n": i})
		out.ToolCalls = append(out.ToolCalls, policy.ToolCall{Name: rapid.SampledFrom([]string{"search", "visit"}).Draw(t, "name"), Arguments: string(args)})
	}
	if out.Content == "" && len(out.ToolCalls) == 0 {
		out.Content = "Done."
	}
	return out
}

// TestChatTemplatePrefixProperty replays conversations as a client would:
// the assistant message comes back as the server's parsers split it. The
// next prompt extends prompt + completion exactly, unless StripReasoning is
// on and the previous turn had reasoning — then, and only then, it breaks.
func TestChatTemplatePrefixProperty(t *testing.T) {
	tok := NewTokenizer()
	imEnd := tok.SpecialID(IMEnd)
	rapid.Check(t, func(t *rapid.T) {
		tp := Template{
			StripReasoning:  rapid.Bool().Draw(t, "strip"),
			DisableThinking: rapid.Bool().Draw(t, "noThinking"),
		}
		reasoningParser := rapid.Bool().Draw(t, "reasoningParser")
		toolParser := rapid.Bool().Draw(t, "toolParser")
		msgs := []Message{{Role: "system", Content: "You research."}, {Role: "user", Content: "What is the founder of Velmora Labs?"}}
		var prevPrompt, prevCompletion []int
		prevHadReasoning := false
		for turn := range rapid.IntRange(1, 5).Draw(t, "turns") {
			text, err := tp.Render(msgs, testTools, true)
			if err != nil {
				t.Fatal(err)
			}
			prompt := tok.Encode(text)
			if turn > 0 {
				extends := slices.Equal(prompt[:min(len(prompt), len(prevPrompt)+len(prevCompletion))], slices.Concat(prevPrompt, prevCompletion))
				wantExtends := !(tp.StripReasoning && prevHadReasoning)
				if extends != wantExtends {
					t.Fatalf("turn %d: prompt extends previous = %v, want %v (strip=%v, reasoning=%v)", turn, extends, wantExtends, tp.StripReasoning, prevHadReasoning)
				}
			}
			out := genOutput(t)
			if tp.DisableThinking {
				out.Reasoning = ""
			}
			generated := RenderAssistant(out)
			completion := append(tok.Encode(generated), imEnd)
			r, c, calls := ParseAssistant(generated, reasoningParser, toolParser)
			msgs = append(msgs, Message{Role: "assistant", Reasoning: r, Content: c, ToolCalls: calls})
			msgs = append(msgs, Message{Role: "tool", Content: "1. [Velmora Labs](http://web.sim/site/a/velmora-labs)\nThe founder of Velmora Labs is Ida Kestrel."})
			prevPrompt, prevCompletion, prevHadReasoning = prompt, completion, out.Reasoning != ""
		}
	})
}
