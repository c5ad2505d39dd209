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
	// StripReasoningBeforeLastQuery is Qwen3's own rule: only the assistant
	// turns before the last user message lose their reasoning; those after
	// it (the tool-calling turns answering the current query) keep it, so
	// the prefix breaks only when a new user message arrives.
	StripReasoningBeforeLastQuery bool
	// DisableThinking is chat_template_kwargs {"enable_thinking": false}: the
	// generation prompt is followed by an empty think block, and so is every
	// earlier assistant turn without reasoning (unlike Qwen3, which keeps the
	// prefix property only this way).
	DisableThinking bool
	// MergeToolResults renders each run of consecutive tool messages as one
	// user turn of <tool_response> blocks, as Qwen3's template does, instead
	// of one tool turn per result.
	MergeToolResults bool
	// CanonicalToolArgs re-serializes the arguments of earlier assistant
	// turns' tool calls in one canonical JSON layout (keys sorted, ", " and
	// ": " separators, as Python's json.dumps writes a dict), as templates
	// that parse the arguments and print them with tojson do. A call whose
	// arguments the model wrote in another layout then re-renders
	// differently.
	CanonicalToolArgs bool
	// TrimContent trims leading and trailing whitespace from every
	// message's content, as templates that strip content do.
	TrimContent bool
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
		if tp.TrimContent {
			system = strings.TrimSpace(system)
		}
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
	lastQuery := -1
	for i, m := range rest {
		if m.Role == "user" {
			lastQuery = i
		}
	}
	for i := 0; i < len(rest); i++ {
		m := rest[i]
		if tp.TrimContent {
			m.Content = strings.TrimSpace(m.Content)
		}
		switch m.Role {
		case "tool":
			if !tp.MergeToolResults {
				writeTurn(&b, m.Role, m.Content)
				continue
			}
			j := i + 1
			for j < len(rest) && rest[j].Role == "tool" {
				j++
			}
			writeTurn(&b, "user", tp.toolResponses(rest[i:j]))
			i = j - 1
		case "user":
			writeTurn(&b, m.Role, m.Content)
		case "assistant":
			writeTurn(&b, "assistant", tp.renderHistoryAssistant(m, tp.StripReasoning || tp.StripReasoningBeforeLastQuery && i < lastQuery))
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

// toolResponses is the body of the user turn that merges tool results:
// each result between <tool_response> tags on lines of their own.
func (tp Template) toolResponses(results []Message) string {
	var b strings.Builder
	for k, m := range results {
		if k > 0 {
			b.WriteString("\n")
		}
		c := m.Content
		if tp.TrimContent {
			c = strings.TrimSpace(c)
		}
		b.WriteString(ToolResponseOpen + "\n" + c + "\n" + ToolResponseClose)
	}
	return b.String()
}

// renderHistoryAssistant renders an assistant turn of the conversation so far.
func (tp Template) renderHistoryAssistant(m Message, strip bool) string {
	out := policy.Output{Reasoning: m.Reasoning, Content: m.Content, ToolCalls: m.ToolCalls}
	if strip {
		out.Reasoning = ""
		out.Content = stripThink(out.Content)
	}
	if tp.CanonicalToolArgs && len(out.ToolCalls) > 0 {
		calls := make([]policy.ToolCall, len(out.ToolCalls))
		for k, c := range out.ToolCalls {
			c.Arguments = canonicalJSON(c.Arguments)
			calls[k] = c
		}
		out.ToolCalls = calls
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
