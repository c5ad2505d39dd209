package llm

import (
	"strings"
	"testing"
)

// TestParserFor: the default parser follows the model's family.
func TestParserFor(t *testing.T) {
	for model, want := range map[string]Parser{
		"Qwen/Qwen3-8B":                           ParserQwen3,
		"qwen3-realtemplate":                      ParserQwen3,
		"Qwen/Qwen2.5-7B-Instruct":                ParserHermes,
		"NousResearch/Hermes-3-Llama-3.1-8B":      ParserHermes,
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": ParserDeepSeekR1,
		"Qwen/QwQ-32B":                            ParserDeepSeekR1,
		"sim-model":                               ParserQwen3,
	} {
		if got := ParserFor(model); got != want {
			t.Errorf("ParserFor(%q) = %s, want %s", model, got, want)
		}
	}
}

// TestParseParser: names are vLLM's, case aside; others are refused with
// the list of accepted ones.
func TestParseParser(t *testing.T) {
	if p, err := ParseParser("DeepSeek_R1"); err != nil || p != ParserDeepSeekR1 {
		t.Fatalf("ParseParser(DeepSeek_R1) = %q, %v", p, err)
	}
	_, err := ParseParser("qwen")
	if err == nil || !strings.Contains(err.Error(), "hermes") {
		t.Fatalf("ParseParser(qwen) = %v, want an error listing the names", err)
	}
	if _, err := New(Config{Role: "planner", Dialect: DialectVLLM, Endpoints: []string{"http://127.0.0.1:1"}, Parser: "llama"}); err == nil || !strings.Contains(err.Error(), "planner") {
		t.Fatalf("New with an unknown parser: %v", err)
	}
}

// TestParsers: each parser splits completions as the vLLM parser of its
// name does.
func TestParsers(t *testing.T) {
	call := "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>"
	cases := []struct {
		p                        Parser
		text                     string
		reasoning, content, tool string
	}{
		{ParserQwen3, "<think>\nhm\n</think>\n\nhello", "hm", "hello", ""},
		{ParserQwen3, "no think block", "", "no think block", ""},
		{ParserQwen3, "<think>\nnever closed", "", "<think>\nnever closed", ""},
		{ParserQwen3, "<think>\nhm\n</think>\n\n" + call, "hm", "", "search"},
		// R1's template opens the block in the generation prompt: the
		// completion starts inside it.
		{ParserDeepSeekR1, "hm</think>answer", "hm", "answer", ""},
		{ParserDeepSeekR1, "<think>hm</think>answer", "hm", "answer", ""},
		{ParserDeepSeekR1, "still thinking", "still thinking", "", ""},
		{ParserDeepSeekR1, "hm</think>\n\n" + call, "hm", "\n", "search"},
		{ParserHermes, "<think>\nhm\n</think>\n\nhello", "", "<think>\nhm\n</think>\n\nhello", ""},
		{ParserHermes, call, "", "", "search"},
		{ParserNone, call, "", call, ""},
	}
	for _, c := range cases {
		tr := c.p.parse(c.text)
		if tr.Message.ReasoningContent != c.reasoning || tr.Message.Content != c.content {
			t.Errorf("%s(%q): reasoning %q content %q, want %q %q", c.p, c.text, tr.Message.ReasoningContent, tr.Message.Content, c.reasoning, c.content)
		}
		name := ""
		if len(tr.ToolCalls) == 1 {
			name = tr.ToolCalls[0].Function.Name
		}
		if name != c.tool || len(tr.ToolCalls) > 1 {
			t.Errorf("%s(%q): %d tool calls (%q), want %q", c.p, c.text, len(tr.ToolCalls), name, c.tool)
		}
	}
}
