package llm

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Parser names how the client reads a completion's text into content,
// reasoning and tool calls where the engine does not (a token-id prompt,
// SGLang's native /generate): the way the server's own parsers would, so
// that the assistant message the agent sees is the one the chat route
// would have returned. The names are vLLM's --reasoning-parser and
// --tool-call-parser names.
type Parser string

// The parsers the client implements.
const (
	// ParserQwen3 is vLLM's qwen3 reasoning parser (a leading
	// "<think>\n…\n</think>\n\n" block is the reasoning, text without a
	// closed block is all content) with hermes tool calls.
	ParserQwen3 Parser = "qwen3"
	// ParserDeepSeekR1 is vLLM's deepseek_r1 reasoning parser: the text
	// before "</think>" is the reasoning (a leading "<think>" dropped; the
	// R1 templates open the block in the generation prompt), all of it when
	// the block never closes; the rest is content, read for hermes tool
	// calls.
	ParserDeepSeekR1 Parser = "deepseek_r1"
	// ParserHermes is hermes tool calls with no reasoning parser
	// (Qwen2.5, Hermes models): the whole text is content.
	ParserHermes Parser = "hermes"
	// ParserNone takes the whole text as content, with no tool calls.
	ParserNone Parser = "none"
)

// Parsers lists the accepted parser names.
var Parsers = []Parser{ParserQwen3, ParserDeepSeekR1, ParserHermes, ParserNone}

// ParseParser returns the parser named s ("" is the model's family
// default, see ParserFor), or an error listing the accepted names.
func ParseParser(s string) (Parser, error) {
	for _, p := range Parsers {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	names := make([]string, len(Parsers))
	for i, p := range Parsers {
		names[i] = string(p)
	}
	return "", fmt.Errorf("unknown parser %q (one of %s)", s, strings.Join(names, ", "))
}

// ParserFor is the default parser of a served model name, by its family
// as vLLM's documentation pairs them: DeepSeek-R1 and QwQ deepseek_r1,
// Qwen2/Qwen2.5 and Hermes hermes, Qwen3 and anything else qwen3 (whose
// reasoning parser leaves text without a think block as content, so it
// is also right for a model that never reasons).
func ParserFor(model string) Parser {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "deepseek-r1"), strings.Contains(m, "deepseek_r1"), strings.Contains(m, "r1-distill"), strings.Contains(m, "qwq"):
		return ParserDeepSeekR1
	case strings.Contains(m, "qwen3"):
		return ParserQwen3
	case strings.Contains(m, "qwen2"), strings.Contains(m, "hermes"):
		return ParserHermes
	}
	return ParserQwen3
}

// parse reads a completion's text into an assistant turn, so that
// replaying the message re-renders the same text. Tool calls not in the
// layout the template re-renders exactly stay in the content (and are
// still parsed into Turn.ToolCalls).
func (p Parser) parse(text string) *Turn {
	var reasoning, content string
	switch p {
	case ParserDeepSeekR1:
		reasoning, content = splitReasoningR1(text)
	case ParserHermes, ParserNone:
		content = text
	default:
		reasoning, content = splitReasoning(text)
	}
	t := &Turn{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ReasoningContent: reasoning, Content: content}}
	if p == ParserNone {
		return t
	}
	res, err := ParseHermes(content)
	t.ToolCalls = res.Calls
	if err != nil {
		t.ToolCallError = asFormatError(err)
	}
	if err == nil && res.Canonical && len(res.Calls) > 0 {
		t.Message.Content = res.Head
		t.Message.ToolCalls = res.Calls
	}
	return t
}

// splitReasoningR1 splits text as vLLM's deepseek_r1 parser does.
func splitReasoningR1(text string) (reasoning, content string) {
	rest := strings.TrimPrefix(text, thinkOpen)
	r, after, found := strings.Cut(rest, thinkClose)
	if !found {
		return rest, ""
	}
	return r, after
}
