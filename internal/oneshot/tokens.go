package oneshot

import (
	"hash/fnv"
	"strconv"
	"strings"
)

// Qwen's special token ids, so the ids look like a Qwen3 server's.
const (
	tokIMStart = 151644
	tokIMEnd   = 151645
	tokNewline = 198
)

// pieces splits text into token-sized pieces: a piece starts at a space or a
// newline and holds at most six bytes. It is context-free per segment, so a
// turn's completion text and the same text rendered back in the next prompt
// give the same ids, and a trajectory's prompts extend each other exactly, as
// a real chat template's do.
func pieces(text string) []string {
	var out []string
	start := 0
	for i := 1; i <= len(text); i++ {
		if i == len(text) || text[i] == ' ' || text[i] == '\n' || i-start >= 6 {
			out = append(out, text[start:i])
			start = i
		}
	}
	return out
}

// tokenID is a piece's id in the range of ordinary vocabulary ids.
func tokenID(piece string) int {
	if piece == "\n" {
		return tokNewline
	}
	h := fnv.New32a()
	h.Write([]byte(piece))
	return int(h.Sum32()%150000) + 100
}

// appendTokens appends text's ids.
func appendTokens(ids []int, text string) []int {
	for _, p := range pieces(text) {
		ids = append(ids, tokenID(p))
	}
	return ids
}

// renderAssistant is an assistant turn as Qwen3's template writes it, with
// the reasoning parser's <think> block and Hermes tool-call blocks: the same
// text is the completion the server samples and the turn it renders back.
func renderAssistant(reasoning, content string, calls []toolCall) string {
	var b strings.Builder
	if reasoning != "" {
		b.WriteString("<think>\n" + reasoning + "\n</think>\n\n")
	}
	b.WriteString(content)
	for i, c := range calls {
		if i > 0 || content != "" {
			b.WriteString("\n")
		}
		b.WriteString(`<tool_call>` + "\n" + `{"name": ` + strconv.Quote(c.Function.Name) + `, "arguments": ` + c.Function.Arguments + "}\n</tool_call>")
	}
	return b.String()
}

// promptIDs renders the request's messages and tools as a Qwen3-like chat
// template and tokenizes them, with the generation prompt at the end.
func promptIDs(req *chatRequest) []int {
	ids := make([]int, 0, 4096)
	turn := func(role, text string) {
		ids = append(ids, tokIMStart)
		ids = appendTokens(ids, role)
		ids = append(ids, tokNewline)
		ids = appendTokens(ids, text)
		ids = append(ids, tokIMEnd, tokNewline)
	}
	for i, m := range req.Messages {
		switch {
		case i == 0 && m.Role == "system":
			turn("system", m.text()+"\n\n# Tools\n"+string(req.Tools))
		case m.Role == "assistant":
			turn("assistant", renderAssistant(m.ReasoningContent, m.text(), m.ToolCalls))
		case m.Role == "tool":
			turn("user", "<tool_response>\n"+m.text()+"\n</tool_response>")
		default:
			turn(m.Role, m.text())
		}
	}
	ids = append(ids, tokIMStart)
	ids = appendTokens(ids, "assistant")
	return append(ids, tokNewline)
}
