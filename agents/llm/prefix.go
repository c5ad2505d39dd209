package llm

import "bytes"

// PromptPrefix carries what one call of a trajectory can reuse from the
// previous one. Every request of a trajectory normally repeats the previous
// request's messages and appends to them, and every prompt starts with the
// previous prompt (then the previous completion and the new messages). So
// a PromptPrefix remembers two things:
//
//   - the encoded JSON of the previous request's messages, with a private
//     copy of each message it encodes. The next request copies the bytes of
//     the leading messages that are still equal, field by field, to those
//     copies and encodes only the rest; callers may edit or rebuild their
//     messages between calls.
//   - the previous answer's prompt token ids, with the exact text the
//     server wrote them as. The next answer's prompt_token_ids start with
//     the same bytes: the client compares them and copies the known ids
//     instead of decoding thousands of numbers again.
//
// Anything else (an edited message, drift, a server writing numbers
// differently, the slow paths) is simply encoded or decoded in full: the
// request body and the results are the same with or without a
// PromptPrefix. It holds one request's encoded messages (with room for the
// next ones) and refers to their strings. Use one
// PromptPrefix per trajectory and one call at a time (it is not safe for
// concurrent use); the zero value is ready.
type PromptPrefix struct {
	// text is the array as the server wrote it, from '[' through the last
	// digit (no closing bracket); ids are the numbers text holds, shared
	// with a Turn and never modified.
	text []byte
	ids  []int
	// buf is the array behind ids, with room for the next prompt's new
	// ids: they are written after ids in place (see extendIDs), so a
	// trajectory's prompts share one growing array instead of each turn
	// copying all the ids before it. Turns hold views capped at their own
	// length, so nothing they do reaches the room beyond.
	buf []int

	// msgsJSON is the messages array of the latest request encoded with
	// this prefix, as appendMessages writes it; sent[i] is a copy of that
	// request's message i and where its encoding ends in msgsJSON. See
	// encode_prefix.go.
	msgsJSON []byte
	sent     []sentMessage
}

// remember stores the prompt ids of the latest answer and their text (a
// slice of a body that is about to be recycled, so it is copied). An empty
// text forgets the ids; the remembered messages stay, as they do not depend
// on the answer.
func (p *PromptPrefix) remember(text []byte, ids []int) {
	if p == nil {
		return
	}
	if len(text) == 0 || len(ids) == 0 {
		p.text, p.ids, p.buf = p.text[:0], nil, nil
		return
	}
	if cap(p.text) < len(text) {
		// Prompts grow turn by turn: leave room for the next ones.
		p.text = make([]byte, 0, 2*len(text))
	}
	p.text, p.ids = append(p.text[:0], text...), ids
	// Keep the array behind ids only when ids is its start (extendIDs made
	// it); otherwise the next call allocates its own.
	if len(p.buf) < len(ids) || &p.buf[0] != &ids[0] {
		p.buf = nil
	}
}

// extendIDs decodes the rest of a prompt_token_ids array after the
// remembered ids and returns them all, capped at their length. The new ids
// go after the known ones in p.buf when it has room, else into a new array
// with room for the next turns' ids, which becomes p.buf.
func (s *jscan) extendIDs(p *PromptPrefix) ([]int, bool) {
	need := len(p.ids) + s.remainingInts()
	var out []int
	if len(p.buf) >= len(p.ids) && cap(p.buf) >= need && len(p.ids) > 0 && &p.buf[0] == &p.ids[0] {
		out = p.buf[:len(p.ids)]
	} else {
		out = make([]int, len(p.ids), need+need/2)
		copy(out, p.ids)
	}
	out, ok := s.appendIntElems(out)
	if !ok {
		return nil, false
	}
	p.buf = out
	return out[:len(out):len(out)], true
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
			out, ok = s.extendIDs(p)
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
