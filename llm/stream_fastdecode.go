package llm

import (
	"reflect"
	"strings"
	"unsafe"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// Fast decoding of stream events.
//
// A streamed answer is one small JSON event per generated token (vLLM's
// chat.completion.chunk, SGLang's /generate event), and decoding each with
// encoding/json cost thirteen times the client CPU of the same answer
// unstreamed. The decoders here fill the same Go values encoding/json fills
// (vllmChunk, generateEvent) with the unstreamed path's scanner, and share
// its rule: whatever they are not sure of — a key that matches a field only
// by case folding, an escaped key, a duplicate field, a value of an
// unexpected type or shape, any JSON error — makes them give up on the
// event, which encoding/json then decodes, its result or error being the
// answer. Each event given up is counted by reason in
// mgrpo_llm_decode_fallback_total, as an unstreamed answer is
// (FuzzFastVLLMChunk and FuzzFastGenerateEvent check the agreement).

// Field names encoding/json matches a stream event's keys against.
var (
	vllmChunkFields       = fieldNames(reflect.TypeFor[vllmChunk]())
	vllmChunkChoiceFields = fieldNames(reflect.TypeFor[vllmChunkChoice]())
	vllmDeltaFields       = fieldNames(reflect.TypeFor[vllmDelta]())
	toolCallDeltaFields   = fieldNames(reflect.TypeFor[toolCallDelta]())
	deltaFunctionFields   = fieldNames(fieldType[toolCallDelta]("Function"))
	chunkLogprobsFields   = fieldNames(fieldType[vllmChunkChoice]("Logprobs"))
	chunkEntryFields      = fieldNames(reflect.TypeFor[chunkLogprobEntry]())
	generateEventFields   = fieldNames(reflect.TypeFor[generateEvent]())
)

// fieldType returns the type of T's field name, dereferenced: the
// anonymous struct types of a chunk's members.
func fieldType[T any](name string) reflect.Type {
	f, _ := reflect.TypeFor[T]().FieldByName(name)
	return f.Type.Elem()
}

// chunkLogprobEntry is the type of one logprobs.content entry of a chunk.
type chunkLogprobEntry = struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// chunkDecoder is fastVLLMChunk with buffers reused from one event of a
// stream to the next: the choices, their token ids and logprob entries, and
// the delta's texts. What it decodes is valid until its next decode, and the
// chunk's object and message, the delta's content, reasoning and
// reasoning_content strings (and the entries' tokens unless they are
// wanted) alias the event's data, so a caller copies what it keeps (chatAssembly.add appends them to its buffers). Everything
// else a chunk's assembly keeps (prompt ids, usage, metadata, role, finish
// reason, tool calls, tokens when wanted) is allocated as encoding/json
// allocates it.
type chunkDecoder struct {
	choices []vllmChunkChoice
	spares  []choiceSpare
}

// choiceSpare holds the buffers of the choice at one position.
type choiceSpare struct {
	ids     []int32
	lp      *chunkLogprobs
	entries []chunkLogprobEntry
	texts   [3]string
}

// chunkLogprobs is the type of a chunk choice's logprobs.
type chunkLogprobs = struct {
	Content []chunkLogprobEntry `json:"content"`
}

// fastVLLMChunk decodes one vLLM stream event into c, which must be zero,
// as json.Unmarshal(data, c) would, with d's buffers; a fallbacks with a
// body reason means "decode it with encoding/json" (and c is left in no
// particular state).
func (d *chunkDecoder) fastVLLMChunk(data []byte, c *vllmChunk, wantTokens bool) fallbacks {
	s := jscan{Scanner: jsonfast.Scanner{B: data}}
	var seen uint
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "choices":
			return s.once(&seen, 1) && d.choicesOf(&s, &c.Choices, wantTokens)
		case "prompt_token_ids":
			if !s.once(&seen, 2) {
				return false
			}
			var ok bool
			c.PromptTokenIDs, ok = s.ints()
			return ok
		case "object":
			return s.once(&seen, 4) && s.viewTo(&c.Object)
		case "message":
			return s.once(&seen, 8) && s.viewTo(&c.Message)
		case "error":
			return s.once(&seen, 16) && s.rawTo(&c.Error)
		case "usage":
			if !s.once(&seen, 32) {
				return false
			}
			if s.Null() {
				return true
			}
			c.Usage = new(openai.Usage)
			return s.usage(c.Usage)
		case "metadata":
			return s.once(&seen, 64) && s.metadata(&c.Metadata)
		}
		return s.streamOther(key, vllmChunkFields)
	})
	if !ok || !s.End() {
		return s.fallbacks(data, false)
	}
	return s.fallbacks(data, true)
}

// streamOther consumes the value of a key a stream decoder has no field
// for, as encoding/json ignores it; a key that names a field only by case
// folding makes the decoder give up.
func (s *jscan) streamOther(key []byte, fields []string) bool {
	for _, f := range fields {
		if len(f) == len(key) && strings.EqualFold(string(key), f) {
			return s.fail(FallbackFoldedKey)
		}
	}
	// A logprob entry's bytes (compact, as servers write them) without the
	// general walk.
	if s.WS(); s.quickBytes() {
		return true
	}
	return s.Skip(0)
}

// choicesOf consumes a chunk's choices array (null is nil). A null
// element, which encoding/json decodes as a choice of index 0, is refused.
func (d *chunkDecoder) choicesOf(s *jscan, dst *[]vllmChunkChoice, wantTokens bool) bool {
	if s.Null() {
		return true
	}
	if !s.Eat('[') {
		return false
	}
	if s.Eat(']') {
		*dst = d.choices[:0:0]
		if *dst == nil {
			*dst = []vllmChunkChoice{}
		}
		return true
	}
	n := 0
	for {
		if n == len(d.choices) {
			d.choices = append(d.choices, vllmChunkChoice{})
			d.spares = append(d.spares, choiceSpare{})
		}
		d.choices[n] = vllmChunkChoice{}
		if !d.choice(s, &d.choices[n], &d.spares[n], wantTokens) {
			return false
		}
		n++
		if s.Eat(',') {
			continue
		}
		if !s.Eat(']') {
			return false
		}
		*dst = d.choices[:n:n]
		return true
	}
}

// choice consumes one choice of a chunk into ch, with sp's buffers.
func (d *chunkDecoder) choice(s *jscan, ch *vllmChunkChoice, sp *choiceSpare, wantTokens bool) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "delta":
			return s.once(&seen, 1) && (s.Null() || s.delta(&ch.Delta, &sp.texts))
		case "token_ids":
			if !s.once(&seen, 2) {
				return false
			}
			ids, ok := s.intsInto(sp.ids)
			if cap(ids) > cap(sp.ids) {
				sp.ids = ids
			}
			ch.TokenIDs = ids
			return ok
		case "logprobs":
			return s.once(&seen, 4) && s.chunkLogprobs(ch, sp, wantTokens)
		case "index":
			return s.once(&seen, 8) && s.intTo(&ch.Index)
		case "finish_reason":
			return s.once(&seen, 16) && s.textPtr(&ch.FinishReason)
		case "stop_reason":
			return s.once(&seen, 32) && s.rawTo(&ch.StopReason)
		}
		return s.streamOther(key, vllmChunkChoiceFields)
	})
}

// intsInto is ints appending to buf[:0] (so its result may alias buf).
func (s *jscan) intsInto(buf []int32) ([]int32, bool) {
	if s.Null() {
		return nil, true
	}
	if !s.Eat('[') {
		return nil, false
	}
	if s.Eat(']') {
		if buf == nil {
			return []int32{}, true
		}
		return buf[:0], true
	}
	return s.appendIntElems(buf[:0])
}

// view consumes a string (or null, which is "") and returns it as Text
// does, aliasing B when it has no escape to resolve.
func (s *jscan) view() (string, bool) {
	if s.Null() {
		return "", true
	}
	s.WS()
	start := s.I
	raw, special, ok := s.Str()
	switch {
	case !ok:
		return "", false
	case special:
		s.I = start
		return s.Text()
	case len(raw) == 0:
		return "", true
	}
	return unsafe.String(&raw[0], len(raw)), true
}

// viewTo is view into *dst.
func (s *jscan) viewTo(dst *string) bool {
	v, ok := s.view()
	if ok {
		*dst = v
	}
	return ok
}

// viewPtr is view into *slot, pointed to by *dst; null leaves *dst nil.
func (s *jscan) viewPtr(dst **string, slot *string) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	v, ok := s.view()
	if ok {
		*slot = v
		*dst = slot
	}
	return ok
}

// textPtr decodes a string into a new *dst; null leaves *dst nil.
func (s *jscan) textPtr(dst **string) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	v, ok := s.Text()
	if ok {
		*dst = &v
	}
	return ok
}

// delta consumes a choice's delta object into d, its texts in texts
// (aliasing B where they can).
func (s *jscan) delta(d *vllmDelta, texts *[3]string) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "content":
			return s.once(&seen, 1) && s.viewPtr(&d.Content, &texts[0])
		case "role":
			return s.once(&seen, 2) && s.textTo(&d.Role)
		case "reasoning":
			return s.once(&seen, 4) && s.viewPtr(&d.Reasoning, &texts[1])
		case "reasoning_content":
			return s.once(&seen, 8) && s.viewPtr(&d.ReasoningContent, &texts[2])
		case "tool_calls":
			return s.once(&seen, 16) && s.toolCallDeltas(&d.ToolCalls)
		}
		return s.streamOther(key, vllmDeltaFields)
	})
}

// toolCallDeltas consumes a delta's tool_calls (null is nil); a null
// element is refused.
func (s *jscan) toolCallDeltas(dst *[]toolCallDelta) bool {
	if s.Null() {
		return true
	}
	if !s.Eat('[') {
		return false
	}
	calls := []toolCallDelta{}
	if !s.Eat(']') {
		for {
			calls = append(calls, toolCallDelta{})
			if !s.toolCallDelta(&calls[len(calls)-1]) {
				return false
			}
			if s.Eat(',') {
				continue
			}
			if !s.Eat(']') {
				return false
			}
			break
		}
	}
	*dst = calls
	return true
}

// toolCallDelta consumes one piece of a tool call.
func (s *jscan) toolCallDelta(tc *toolCallDelta) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "index":
			if !s.once(&seen, 1) {
				return false
			}
			if s.Null() {
				return true
			}
			v, ok := s.Int()
			tc.Index = &v
			return ok
		case "id":
			return s.once(&seen, 2) && s.textTo(&tc.ID)
		case "type":
			return s.once(&seen, 4) && s.textTo(&tc.Type)
		case "function":
			if !s.once(&seen, 8) {
				return false
			}
			if s.Null() {
				return true
			}
			tc.Function = &struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}{}
			f := tc.Function
			var fseen uint
			return s.members(func(key []byte) bool {
				switch string(key) {
				case "name":
					return s.once(&fseen, 1) && s.textTo(&f.Name)
				case "arguments":
					return s.once(&fseen, 2) && s.textTo(&f.Arguments)
				}
				return s.streamOther(key, deltaFunctionFields)
			})
		}
		return s.streamOther(key, toolCallDeltaFields)
	})
}

// chunkLogprobs consumes a choice's logprobs (null is nil) with sp's
// buffers: the content entries' tokens and logprobs; bytes and
// top_logprobs, which the chunk type has no field for, are validated and
// skipped, as encoding/json does.
func (s *jscan) chunkLogprobs(ch *vllmChunkChoice, sp *choiceSpare, wantTokens bool) bool {
	if s.Null() {
		return true
	}
	if sp.lp == nil {
		sp.lp = new(chunkLogprobs)
	}
	*sp.lp = chunkLogprobs{}
	ch.Logprobs = sp.lp
	var seen uint
	return s.members(func(key []byte) bool {
		if string(key) != "content" {
			return s.streamOther(key, chunkLogprobsFields)
		}
		if !s.once(&seen, 1) {
			return false
		}
		if s.Null() {
			return true
		}
		if !s.Eat('[') {
			return false
		}
		entries := sp.entries[:0]
		if entries == nil {
			entries = []chunkLogprobEntry{}
		}
		if !s.Eat(']') {
			for {
				entries = append(entries, chunkLogprobEntry{})
				if !s.chunkEntry(&entries[len(entries)-1], wantTokens) {
					return false
				}
				if s.Eat(',') {
					continue
				}
				if !s.Eat(']') {
					return false
				}
				break
			}
		}
		if cap(entries) > cap(sp.entries) {
			sp.entries = entries
		}
		sp.lp.Content = entries
		return true
	})
}

// chunkEntry consumes one logprobs.content entry; a null entry, which
// encoding/json decodes as logprob 0, is refused. Its token aliases B
// unless it is wanted.
func (s *jscan) chunkEntry(e *chunkLogprobEntry, wantTokens bool) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "token":
			if !s.once(&seen, 1) {
				return false
			}
			if wantTokens {
				return s.textTo(&e.Token)
			}
			v, ok := s.view()
			e.Token = v
			return ok
		case "logprob":
			if !s.once(&seen, 2) {
				return false
			}
			if s.Null() {
				return true
			}
			v, ok := s.Float()
			e.Logprob = v
			return ok
		}
		return s.streamOther(key, chunkEntryFields)
	})
}

// fastGenerateEvent decodes one event of SGLang's streamed /generate into
// ev, which must be zero, as json.Unmarshal(data, ev) would (see
// fastVLLMChunk). meta_info members of an unusual shape go to
// encoding/json as a small object, as on the unstreamed route.
func fastGenerateEvent(data []byte, ev *generateEvent) fallbacks {
	sc := getScratch()
	defer putScratch(sc)
	s := jscan{Scanner: jsonfast.Scanner{B: data}}
	var seen uint
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "output_ids":
			if !s.once(&seen, 1) {
				return false
			}
			var ok bool
			ev.OutputIDs, ok = s.ints()
			return ok
		case "meta_info":
			if !s.once(&seen, 2) {
				return false
			}
			var ok bool
			ev.MetaInfo, ok = s.metaInfo(sc)
			return ok
		case "text":
			return s.once(&seen, 4) && s.textPtr(&ev.Text)
		case "error":
			return s.once(&seen, 8) && s.rawTo(&ev.Error)
		}
		return s.streamOther(key, generateEventFields)
	})
	if !ok || !s.End() {
		return s.fallbacks(data, false)
	}
	return s.fallbacks(data, true)
}
