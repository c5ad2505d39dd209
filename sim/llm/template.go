package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// Message is a chat message as the server handles it.
type Message = policy.Message

// Template is the simulated model's ChatML chat template, shaped like Qwen's:
//
//	<|im_start|>system\n{system prompt}{tools section}<|im_end|>\n
//	<|im_start|>user\n{content}<|im_end|>\n
//	<|im_start|>assistant\n{<think>…</think>}{content}{<tool_call> blocks}<|im_end|>\n
//	<|im_start|>tool\n{result}<|im_end|>\n
//	<|im_start|>assistant\n                       (generation prompt)
//
// An assistant turn renders exactly as RenderAssistant wrote it when it was
// generated, so a client that replays the conversation verbatim gets a prompt
// whose token ids extend the previous prompt and completion exactly.
type Template struct {
	// StripReasoning drops the <think>…</think> block of every earlier
	// assistant turn, as Qwen3's template does for turns before the latest
	// query. Each new prompt then no longer extends the previous prompt and
	// completion: the drift a token-exact client must detect.
	StripReasoning bool
	// DisableThinking is chat_template_kwargs {"enable_thinking": false}: the
	// generation prompt is followed by an empty think block, and so is every
	// earlier assistant turn without reasoning (unlike Qwen3, which keeps the
	// prefix property only this way).
	DisableThinking bool
}

// emptyThink is the think block a turn generated without thinking starts with.
const emptyThink = ThinkOpen + "\n\n" + ThinkClose + "\n\n"

// Render applies the template. Roles other than system, user, assistant and
// tool are an error naming the message index.
func (tp Template) Render(msgs []Message, tools []policy.Tool, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	system, rest := "", msgs
	if len(msgs) > 0 && msgs[0].Role == "system" {
		system, rest = msgs[0].Content, msgs[1:]
	}
	if len(tools) > 0 {
		section, err := toolsSection(tools)
		if err != nil {
			return "", err
		}
		if system != "" {
			system += "\n\n"
		}
		system += section
	}
	b.Grow(renderSizeHint(system, rest))
	if system != "" || (len(msgs) > 0 && msgs[0].Role == "system") {
		writeTurn(&b, "system", system)
	}
	for i, m := range rest {
		switch m.Role {
		case "user", "tool":
			writeTurn(&b, m.Role, m.Content)
		case "assistant":
			writeTurn(&b, "assistant", tp.renderHistoryAssistant(m))
		case "system":
			writeTurn(&b, "system", m.Content)
		default:
			idx := i
			if len(rest) != len(msgs) {
				idx++
			}
			return "", fmt.Errorf("messages[%d]: unknown role %q (want system, user, assistant or tool)", idx, m.Role)
		}
	}
	if addGenerationPrompt {
		b.WriteString(IMStart + "assistant\n")
		if tp.DisableThinking {
			b.WriteString(emptyThink)
		}
	}
	return b.String(), nil
}

// renderSizeHint estimates the length of a rendered prompt, so that Render
// allocates it once instead of growing it turn by turn (a prompt is many
// kilobytes).
func renderSizeHint(system string, rest []Message) int {
	const perTurn = 64 // markers, role and think/tool-call tags
	n := len(system) + 2*perTurn
	for _, m := range rest {
		n += perTurn + len(m.Content) + len(m.Reasoning)
		for _, c := range m.ToolCalls {
			n += perTurn + len(c.Name) + len(c.Arguments)
		}
	}
	return n
}

func writeTurn(b *strings.Builder, role, body string) {
	b.WriteString(IMStart)
	b.WriteString(role)
	b.WriteString("\n")
	b.WriteString(body)
	b.WriteString(IMEnd + "\n")
}

// renderHistoryAssistant renders an assistant turn of the conversation so far.
func (tp Template) renderHistoryAssistant(m Message) string {
	out := policy.Output{Reasoning: m.Reasoning, Content: m.Content, ToolCalls: m.ToolCalls}
	if tp.StripReasoning {
		out.Reasoning = ""
		out.Content = stripThink(out.Content)
	}
	text := RenderAssistant(out)
	if tp.DisableThinking && !strings.HasPrefix(text, ThinkOpen) {
		text = emptyThink + text
	}
	return text
}

// stripThink removes a leading <think>…</think> block and the whitespace
// after it.
func stripThink(content string) string {
	rest, ok := strings.CutPrefix(content, ThinkOpen)
	if !ok {
		return content
	}
	_, after, found := strings.Cut(rest, ThinkClose)
	if !found {
		return content
	}
	return strings.TrimLeft(after, "\n ")
}

// RenderAssistant writes an assistant turn in the canonical layout the model
// generates (without the closing <|im_end|>):
//
//	"<think>\n" + reasoning + "\n</think>\n\n"   (when there is reasoning)
//	content
//	"\n"                                          (when content and calls)
//	"<tool_call>\n" + {"name": N, "arguments": A} + "\n</tool_call>", joined by "\n"
//
// Arguments are written verbatim, so malformed JSON stays malformed.
func RenderAssistant(o policy.Output) string {
	var b strings.Builder
	if o.Reasoning != "" {
		b.WriteString(ThinkOpen + "\n" + o.Reasoning + "\n" + ThinkClose + "\n\n")
	}
	b.WriteString(o.Content)
	for i, c := range o.ToolCalls {
		if i > 0 || o.Content != "" {
			b.WriteString("\n")
		}
		name, _ := json.Marshal(c.Name)
		b.WriteString(ToolCallOpen + "\n{\"name\": " + string(name) + ", \"arguments\": " + c.Arguments + "}\n" + ToolCallClose)
	}
	return b.String()
}
