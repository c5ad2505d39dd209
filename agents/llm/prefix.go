package llm

import "bytes"

// PromptPrefix carries the previous prompt's token ids from one call of a
// trajectory to the next, with the exact text the server wrote them as.
// Every prompt of a trajectory normally starts with the previous prompt
// (then the previous completion and the new messages), so the next
// answer's prompt_token_ids start with the same bytes: the client compares
// them and copies the known ids instead of decoding thousands of numbers
// again. Anything else (drift, a server writing numbers differently, the
// slow decoding path) simply decodes the whole array. Use one PromptPrefix
// per trajectory and one call at a time; the zero value is ready.
type PromptPrefix struct {
	// text is the array as the server wrote it, from '[' through the last
	// digit (no closing bracket); ids are the numbers text holds, shared
	// with a Turn and never modified.
	text []byte
	ids  []int
}

// remember stores the prompt ids of the latest answer and their text (a
// slice of a body that is about to be recycled, so it is copied). An empty
// text forgets the prefix.
func (p *PromptPrefix) remember(text []byte, ids []int) {
	if p == nil {
		return
	}
	if len(text) == 0 || len(ids) == 0 {
		p.text, p.ids = p.text[:0], nil
		return
	}
	p.text, p.ids = append(p.text[:0], text...), ids
}

// promptIDs consumes a prompt_token_ids array as ints does. When s.prefix
// matches the start of the array, followed by a comma, its ids are copied
// and only the rest is decoded. It records the array's text, up to its
// last digit, in s.promptText.
func (s *jscan) promptIDs() ([]int, bool) {
	s.WS()
	start := s.I
	s.promptText = nil
	var (
		out []int
		ok  bool
	)
	if p := s.prefix; p != nil && len(p.text) > 0 {
		rest := s.B[s.I:]
		if n := len(p.text); len(rest) > n && rest[n] == ',' && bytes.Equal(rest[:n], p.text) {
			s.I += n + 1
			s.WS()
			out, ok = s.intElems(p.ids)
			if !ok {
				return nil, false
			}
		}
	}
	if out == nil {
		if out, ok = s.ints(); !ok {
			return nil, false
		}
	}
	if end := s.I - 1; len(out) > 0 && end > start && s.B[end] == ']' {
		for end > start && isJSONSpace(s.B[end-1]) {
			end--
		}
		s.promptText = s.B[start:end]
	}
	return out, true
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
