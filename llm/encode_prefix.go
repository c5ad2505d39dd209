package llm

import openai "github.com/sashabaranov/go-openai"

// sentMessage is a private copy of everything appendMessage writes from one
// message, and the offset in PromptPrefix.msgsJSON where its encoding
// ends. Strings are immutable, so copying one keeps its header; slices and
// pointees, which a caller may change in place, are copied by value.
type sentMessage struct {
	role, content, refusal, name, reasoning, toolCallID string

	hasFunction bool
	function    openai.FunctionCall
	calls       []sentCall

	end int
}

// sentCall is a copy of an openai.ToolCall (see plainToolCall).
type sentCall struct {
	hasIndex bool
	index    int
	id       string
	typ      openai.ToolType
	function openai.FunctionCall
}

// set makes s a copy of m, which ends at end, reusing s's tool call slice.
func (s *sentMessage) set(m *openai.ChatCompletionMessage, end int) {
	calls := s.calls[:0]
	for k := range m.ToolCalls {
		tc := &m.ToolCalls[k]
		c := sentCall{hasIndex: tc.Index != nil, id: tc.ID, typ: tc.Type, function: tc.Function}
		if c.hasIndex {
			c.index = *tc.Index
		}
		calls = append(calls, c)
	}
	*s = sentMessage{
		role: m.Role, content: m.Content, refusal: m.Refusal, name: m.Name,
		reasoning: m.ReasoningContent, toolCallID: m.ToolCallID,
		hasFunction: m.FunctionCall != nil,
		calls:       calls,
		end:         end,
	}
	if m.FunctionCall != nil {
		s.function = *m.FunctionCall
	}
}

// matches reports whether m encodes exactly as the message s was copied
// from. String comparison checks the lengths and then (on amd64 and arm64)
// the data pointers before the bytes, so a message the caller appended and
// left alone costs a few word comparisons; a rebuilt one costs a memory
// comparison, still far less than encoding it.
func (s *sentMessage) matches(m *openai.ChatCompletionMessage) bool {
	if !plainContent(m) ||
		m.Role != s.role || m.Content != s.content || m.Refusal != s.refusal || m.Name != s.name ||
		m.ReasoningContent != s.reasoning || m.ToolCallID != s.toolCallID ||
		(m.FunctionCall != nil) != s.hasFunction || m.FunctionCall != nil && *m.FunctionCall != s.function ||
		len(m.ToolCalls) != len(s.calls) {
		return false
	}
	for k := range s.calls {
		c, tc := &s.calls[k], &m.ToolCalls[k]
		if (tc.Index != nil) != c.hasIndex || tc.Index != nil && *tc.Index != c.index ||
			tc.ID != c.id || tc.Type != c.typ || tc.Function != c.function {
			return false
		}
	}
	return true
}

// reusable returns how many leading messages of msgs p can copy: those
// equal to the previous request's messages at the same positions.
func (p *PromptPrefix) reusable(msgs []openai.ChatCompletionMessage) int {
	n := 0
	for n < len(msgs) && n < len(p.sent) && p.sent[n].matches(&msgs[n]) {
		n++
	}
	return n
}

// maxIdlePrefix is the capacity above which a PromptPrefix's buffers are
// trimmed when they hold much less: one PromptPrefix reused for a short
// trajectory after a long one should not keep the long one's memory.
const maxIdlePrefix = 64 << 10

// appendMessages returns msgs encoded as the package-level appendMessages
// writes them (and reports false where it does): the bytes of the leading
// messages that reusable accepts are copied from the previous request's
// array, the rest are encoded. The result belongs to p and is valid until
// p's next use. p then remembers msgs, up to the first one the fast path
// refuses.
func (p *PromptPrefix) appendMessages(msgs []openai.ChatCompletionMessage) ([]byte, bool) {
	n := p.reusable(msgs)
	old := len(p.sent)
	p.sent = p.sent[:n]
	dst := p.msgsJSON[:0]
	if n > 0 {
		dst = p.msgsJSON[:p.sent[n-1].end]
	}
	// A trajectory's history grows call by call: grow once, with room for
	// the calls to come (withRoom), rather than doubling from a few bytes
	// on a new prefix.
	if need := len(dst) + encodedSize(msgs[n:]); need > cap(dst) {
		dst = append(make([]byte, 0, withRoom(need)), dst...)
	}
	if len(msgs) > cap(p.sent) {
		p.sent = append(make([]sentMessage, 0, 2*len(msgs)), p.sent...)
	}
	if n == 0 {
		dst = append(dst, '[')
	}
	ok := true
	for i := n; i < len(msgs); i++ {
		m := &msgs[i]
		if !plainContent(m) {
			ok = false
			break
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessage(dst, m)
		// Reusing the slot keeps its tool call slice.
		p.sent = p.sent[:len(p.sent)+1]
		p.sent[len(p.sent)-1].set(m, len(dst))
	}
	if len(p.sent) < old {
		// The dropped copies would otherwise keep the caller's strings.
		clear(p.sent[len(p.sent):old])
	}
	if ok {
		dst = append(dst, ']')
	}
	p.msgsJSON = dst
	if cap(dst) > maxIdlePrefix && cap(dst) > 4*len(dst) {
		p.msgsJSON = append([]byte(nil), dst...)
	}
	if cap(p.sent) > maxIdlePrefix/64 && cap(p.sent) > 4*len(p.sent) {
		p.sent = append([]sentMessage(nil), p.sent...)
	}
	return p.msgsJSON, ok
}

// encodedSize estimates the length of msgs encoded, separators and closing
// bracket included: their strings (which escaping may lengthen) and the
// member names.
func encodedSize(msgs []openai.ChatCompletionMessage) int {
	size := 1
	for i := range msgs {
		m := &msgs[i]
		size += 32 + len(m.Role) + len(m.Content) + len(m.Refusal) + len(m.Name) + len(m.ReasoningContent) + len(m.ToolCallID)
		if fc := m.FunctionCall; fc != nil {
			size += 40 + len(fc.Name) + len(fc.Arguments)
		}
		for k := range m.ToolCalls {
			tc := &m.ToolCalls[k]
			size += 64 + len(tc.ID) + len(tc.Type) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	return size
}
