package llm

import (
	"math/rand/v2"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// fuzzHistory turns fuzz input into messages and edits: ops drives the
// choices, text supplies the strings.
type fuzzHistory struct {
	ops  []byte
	text string
}

func (f *fuzzHistory) done() bool { return len(f.ops) == 0 }

// next returns the next choice byte (0 once ops is used up).
func (f *fuzzHistory) next() int {
	if len(f.ops) == 0 {
		return 0
	}
	b := f.ops[0]
	f.ops = f.ops[1:]
	return int(b)
}

// pick returns a choice below n (n > 0).
func (f *fuzzHistory) pick(n int) int { return f.next() % n }

// str returns a piece of text: empty, or a substring (any bytes, not
// necessarily valid UTF-8), sometimes a fresh copy.
func (f *fuzzHistory) str() string {
	c := f.next()
	if c%4 == 0 {
		return ""
	}
	a, b := f.pick(len(f.text)+1), f.pick(len(f.text)+1)
	s := f.text[min(a, b):max(a, b)]
	if c%4 == 3 {
		s = strings.Clone(s)
	}
	return s
}

func (f *fuzzHistory) message() histMsg {
	roles := []string{"system", "user", "assistant", "tool"}
	m := histMsg{Role: roles[f.pick(len(roles))], Content: f.str()}
	bits := f.next()
	if bits&1 != 0 {
		m.Refusal, m.Name = f.str(), f.str()
	}
	if bits&2 != 0 {
		m.ReasoningContent = f.str()
	}
	if bits&4 != 0 {
		m.ToolCallID = f.str()
	}
	if bits&8 != 0 {
		m.FunctionCall = &openai.FunctionCall{Name: f.str(), Arguments: f.str()}
	}
	if bits&16 != 0 {
		for range f.pick(3) {
			m.ToolCalls = append(m.ToolCalls, f.toolCall())
		}
	}
	if bits&32 != 0 {
		f.multiContent(&m)
	}
	return m
}

func (f *fuzzHistory) toolCall() openai.ToolCall {
	tc := openai.ToolCall{ID: f.str(), Type: openai.ToolType(f.str()), Function: openai.FunctionCall{Name: f.str(), Arguments: f.str()}}
	if c := f.next(); c%2 == 1 {
		tc.Index = ptr(c / 2)
	}
	return tc
}

// multiContent gives m multi-part content of some kind: nil, empty, or
// one part (the last two the fast path refuses when Content is set).
func (f *fuzzHistory) multiContent(m *histMsg) {
	switch f.pick(3) {
	case 0:
		m.MultiContent = nil
	case 1:
		m.MultiContent = []openai.ChatMessagePart{}
	case 2:
		m.MultiContent = []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: f.str()}}
	}
}

// edit changes one field of m in place (tool calls and the function call
// through their shared memory).
func (f *fuzzHistory) edit(m *histMsg) {
	switch f.pick(12) {
	case 0:
		m.Role = f.str()
	case 1:
		m.Content = f.str()
	case 2:
		m.Refusal = f.str()
	case 3:
		m.Name = f.str()
	case 4:
		m.ReasoningContent = f.str()
	case 5:
		m.ToolCallID = f.str()
	case 6:
		if m.FunctionCall != nil && f.next()%2 == 0 {
			m.FunctionCall.Arguments = f.str()
		} else {
			m.FunctionCall = nil
		}
	case 7:
		m.ToolCalls = append(m.ToolCalls, f.toolCall())
	case 8:
		m.ToolCalls = m.ToolCalls[:f.pick(len(m.ToolCalls)+1)]
	case 9:
		if len(m.ToolCalls) > 0 {
			tc := &m.ToolCalls[f.pick(len(m.ToolCalls))]
			switch f.pick(4) {
			case 0:
				tc.Function.Arguments = f.str()
			case 1:
				tc.ID = f.str()
			case 2:
				tc.Type = openai.ToolType(f.str())
			case 3:
				if tc.Index != nil && f.next()%2 == 0 {
					*tc.Index++
				} else {
					tc.Index = nil
				}
			}
		}
	case 10:
		f.multiContent(m)
	case 11:
		*m = f.message()
	}
}

// FuzzPromptPrefixEncode plays random histories and edits through one
// PromptPrefix: appends, in-place edits of any field, truncations, deep
// copies and swaps. Every body must equal the body encoded without it.
func FuzzPromptPrefixEncode(f *testing.F) {
	f.Add([]byte{0, 1, 9, 1, 0, 2, 17, 30, 4, 1, 0, 5, 255, 8, 3, 2, 2, 0, 9, 1, 3, 1, 4, 2, 5, 6, 6, 0, 7}, "hello <world> & \"q\"")
	f.Add([]byte{0, 2, 31, 16, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1, 2, 9, 1, 1, 0, 1, 4, 3, 3, 1, 2, 3}, "a\x00b\u2028\xffé😀")
	f.Add([]byte{0, 3, 33, 2, 0, 1, 2, 2, 5, 0, 1, 1, 0, 10, 2, 1, 3, 1, 2, 4, 1, 0, 1, 4, 5, 0, 3}, "multi")
	f.Add([]byte{1, 0, 1, 0, 1, 0, 5, 5, 5, 3, 3, 4, 7, 7, 2, 1, 6, 1, 2, 1, 1, 0, 2, 3, 4, 6, 7}, "tool calls {\"q\":1}")
	// Random op strings reach the deeper edits (a tool call's index, a
	// function call's arguments) under plain go test too.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		ops := make([]byte, 64+rng.IntN(256))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		f.Add(ops, "Victor <Hugo> & \"Les Misérables\" \u2028\xff 1862")
	}
	f.Fuzz(func(t *testing.T, ops []byte, text string) {
		in := &fuzzHistory{ops: ops, text: text}
		var p PromptPrefix
		msgs := []histMsg{}
		for step := 0; step < 24 && !in.done(); step++ {
			switch in.pick(8) {
			case 0, 1:
				for range 1 + in.pick(3) {
					msgs = append(msgs, in.message())
				}
			case 2, 3:
				if len(msgs) > 0 {
					in.edit(&msgs[in.pick(len(msgs))])
				}
			case 4:
				msgs = msgs[:in.pick(len(msgs)+1)]
			case 5:
				msgs = cloneMessages(msgs)
			case 6:
				if len(msgs) > 1 {
					i, j := in.pick(len(msgs)), in.pick(len(msgs))
					msgs[i], msgs[j] = msgs[j], msgs[i]
				}
			case 7:
				// The same messages again.
			}
			checkPrefixEncode(t, &p, msgs)
		}
	})
}
