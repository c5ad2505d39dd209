package llm

import (
	"hash/maphash"
	"slices"
)

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
//   - the previous answer's prompt token ids, with the length and a digest
//     of the exact text the server wrote them as. The next answer's
//     prompt_token_ids start with the same bytes: the client checks their
//     digest and copies the known ids instead of decoding thousands of
//     numbers again.
//
// The turns of a trajectory share one growing id array: each answer's
// completion ids are placed right after its prompt ids, the next prompt's
// ids are checked against them and its new ids written after them, so the
// array ends up holding the whole conversation's token sequence once and
// Sequences takes it as is. Nothing is ever written over ids a turn holds:
// a prompt that does not continue the completion gets an array of its own.
// When a prompt outgrows the array, its ids go to a larger one and the
// earlier turns' id slices are pointed at it (the same values), so a
// trajectory holds one array, not every one it outgrew: read a
// trajectory's earlier turns between its calls, not during one.
//
// Anything else (an edited message, drift, a server writing numbers
// differently, the slow paths) is simply encoded or decoded in full: the
// request body and the results are the same with or without a
// PromptPrefix. It holds one request's encoded messages (with room for the
// next ones) and refers to their strings. Use one
// PromptPrefix per trajectory and one call at a time (it is not safe for
// concurrent use); the zero value is ready.
type PromptPrefix struct {
	// text is the digest of the array as the server wrote it, from '['
	// through the last digit (no closing bracket); ids are the numbers that
	// text holds, shared with a Turn and never modified.
	text textDigest
	ids  []int32
	// comp is the completion that answered ids, placed right after them in
	// buf (see remember); nil when it was not.
	comp []int32
	// buf is the array behind ids (and comp), with room for the next
	// prompt's new ids: they are written after ids and comp in place (see
	// extendIDs), so a trajectory's prompts and completions share one
	// growing array instead of each turn copying all the ids before it.
	// Turns hold views capped at their own length, so nothing they do
	// reaches the room beyond, and nothing is ever written over a view.
	buf []int32

	// msgsJSON is the messages array of the latest request encoded with
	// this prefix, as appendMessages writes it; sent[i] is a copy of that
	// request's message i and where its encoding ends in msgsJSON. See
	// encode_prefix.go.
	msgsJSON []byte
	sent     []sentMessage

	// placed are the trajectory's turns whose ids lie in one array, in
	// call order. When a turn's ids move to a new, larger array (the
	// prompt outgrew the room), the earlier turns whose ids the new array
	// repeats are pointed at it too (see adopt), so that a trajectory
	// keeps one array alive instead of every array it outgrew.
	placed []*Turn
}

// Release forgets what the prefix remembers of the previous request and
// answer (the encoded messages and the text of the prompt ids), for a
// trajectory about to wait long between calls: a planner while its
// executors run holds nothing then, and its next call encodes and decodes
// in full, with the same results. The turns' ids stay as they are.
func (p *PromptPrefix) Release() {
	if p == nil {
		return
	}
	p.text, p.ids, p.comp, p.buf = textDigest{}, nil, nil, nil
	p.msgsJSON, p.sent = nil, nil
}

// rememberTurn remembers t's prompt and completion (see remember) and
// points t's ids at the trajectory's array, where the completion follows
// the prompt.
func (p *PromptPrefix) rememberTurn(text []byte, t *Turn) {
	if p == nil {
		return
	}
	if prompt, completion, both := p.remember(text, t.PromptIDs, t.CompletionIDs); both != nil {
		t.PromptIDs, t.CompletionIDs, t.tokens = prompt, completion, both
		p.adopt(t)
	} else {
		p.placed = p.placed[:0]
	}
}

// adopt records t, whose ids were just placed in the trajectory's array,
// and points the earlier placed turns at that array when they lie in an
// older one whose ids it repeats at the same positions: the same values,
// one array. A turn the caller changed (its ids no longer in the array it
// was given) or one the new array does not repeat (drift) is left as it is
// and forgotten. The check of the longest earlier turn covers the shorter
// ones of the same old array, so moving costs one comparison of ids each
// time the array grows.
func (p *PromptPrefix) adopt(t *Turn) {
	arr := t.tokens
	var (
		checked  *int32 // the old array whose first checkedN ids arr repeats
		checkedN int
	)
	for i := len(p.placed) - 1; i >= 0; i-- {
		o := p.placed[i]
		ot := o.contiguous()
		n := len(ot)
		switch {
		case ot == nil || n > len(arr):
			p.placed[i] = nil
		case &ot[0] == &arr[0]:
		case &ot[0] == checked && n <= checkedN:
			o.point(arr[:n])
		case slices.Equal(ot, arr[:n]):
			checked, checkedN = &ot[0], n
			o.point(arr[:n])
		default:
			p.placed[i] = nil
		}
	}
	p.placed = append(slices.DeleteFunc(p.placed, func(o *Turn) bool { return o == nil }), t)
}

// remember stores the prompt ids of the latest answer and the digest of
// their text (a slice of a body that is about to be recycled). An empty
// text forgets the ids; the remembered messages stay, as they do not
// depend on the answer.
//
// A non-empty completion is placed right after the prompt in the
// trajectory's array (copying the prompt there too when it is not already
// in it), and the views of the prompt, the completion and both are
// returned: the next prompt normally continues with this completion, so
// the array then holds the whole trajectory's sequence once (see
// extendIDs and Sequences). Without a completion they are nil.
func (p *PromptPrefix) remember(text []byte, prompt, completion []int32) (pv, cv, both []int32) {
	if len(text) == 0 || len(prompt) == 0 {
		p.text, p.ids, p.comp, p.buf = textDigest{}, nil, nil, nil
		return nil, nil, nil
	}
	p.text = digestText(text)
	n, m := len(prompt), len(completion)
	inBuf := len(p.buf) >= n && &p.buf[0] == &prompt[0]
	p.ids, p.comp = prompt, nil
	if m == 0 {
		// Keep the array behind the ids only when they are its start
		// (extendIDs made it); otherwise the next call allocates its own.
		if !inBuf {
			p.buf = nil
		} else {
			p.buf = p.buf[:n]
		}
		return nil, nil, nil
	}
	var buf []int32
	if inBuf && cap(p.buf) >= n+m {
		buf = p.buf[:n]
	} else {
		buf = make([]int32, n, withRoom(n+m))
		copy(buf, prompt)
	}
	buf = append(buf, completion...)
	p.buf = buf
	p.ids, p.comp = buf[:n:n], buf[n:n+m:n+m]
	return p.ids, p.comp, buf[: n+m : n+m]
}

// extendIDs decodes the rest of a prompt_token_ids array after the
// remembered prompt ids and returns them all, capped at their length. When
// the array goes on with the remembered completion, which remember placed
// after the prompt, those ids are checked rather than decoded and the new
// ids go after them; otherwise they go after the prompt. They are written
// in place when p.buf has room and nothing there would be overwritten, else
// into a new array with room for the next turns' ids, which becomes p.buf.
func (s *jscan) extendIDs(p *PromptPrefix) ([]int32, bool) {
	known := len(p.ids)
	inBuf := known > 0 && len(p.buf) >= known && &p.buf[0] == &p.ids[0]
	// Without a remembered completion the room after the prompt is free.
	free := inBuf && len(p.comp) == 0
	if m := len(p.comp); inBuf && m > 0 && len(p.buf) == known+m {
		at := s.I
		switch done, ok := s.matchInts(p.comp); {
		case ok && done:
			// The prompt is the previous prompt and completion exactly.
			p.buf = p.buf[:known+m]
			return p.buf[: known+m : known+m], true
		case ok:
			known += m
			free = true
		default:
			s.I = at
		}
	}
	need := known + s.remainingInts()
	var out []int32
	if free && cap(p.buf) >= need {
		out = p.buf[:known]
	} else {
		src := p.ids
		if known > len(p.ids) {
			src = p.buf[:known]
		}
		out = make([]int32, known, withRoom(need))
		copy(out, src)
	}
	out, ok := s.appendIntElems(out)
	if !ok {
		return nil, false
	}
	p.buf = out
	return out[:len(out):len(out)], true
}

// matchInts consumes want's values from an integer array's elements, each
// followed by a comma or, for the last, the closing bracket (done). It
// reports false, having consumed an unknown amount, when the elements
// differ from want or are not plain integers.
func (s *jscan) matchInts(want []int32) (done, ok bool) {
	for i, w := range want {
		v, ok := s.int32()
		if !ok || v != w {
			return false, false
		}
		s.WS()
		if s.I >= len(s.B) {
			return false, false
		}
		switch s.B[s.I] {
		case ',':
			s.I++
			s.WS()
		case ']':
			if i != len(want)-1 {
				return false, false
			}
			s.I++
			return true, true
		default:
			return false, false
		}
	}
	return false, true
}

// promptIDs consumes a prompt_token_ids array as ints does. When s.prefix
// matches the start of the array, followed by a comma, its ids are copied
// and only the rest is decoded. It records the array's text, up to its
// last digit, in s.promptText.
func (s *jscan) promptIDs() ([]int32, bool) {
	s.WS()
	start := s.I
	s.promptText = nil
	var (
		out []int32
		ok  bool
	)
	if p := s.prefix; p != nil && p.text.n > 0 {
		rest := s.B[s.I:]
		if n := p.text.n; len(rest) > n && rest[n] == ',' && p.text.matches(rest[:n]) {
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

// withRoom is the capacity to give an array of n values that grows call by
// call (a trajectory's ids, its encoded messages): a quarter more, so that
// the next calls usually append in place without holding twice what is
// needed across thousands of conversations in flight.
func withRoom(n int) int { return n + max(n/4, 256) }

// promptTextSeed seeds the digests of remembered prompt texts.
var promptTextSeed = maphash.MakeSeed()

// textDigest stands for a text the prefix no longer holds: its length and
// its 64-bit hash (hash/maphash, with a seed of this process's own). The
// chance that a different text of the same length matches is 2⁻⁶⁴ per
// check; holding the digest instead of the text saves about 6 bytes a
// prompt token for every conversation in flight.
type textDigest struct {
	n   int
	sum uint64
}

func digestText(b []byte) textDigest {
	return textDigest{n: len(b), sum: maphash.Bytes(promptTextSeed, b)}
}

// matches reports whether b is the text d stands for.
func (d textDigest) matches(b []byte) bool {
	return len(b) == d.n && maphash.Bytes(promptTextSeed, b) == d.sum
}
