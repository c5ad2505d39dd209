package llm

import (
	"encoding/json"
	"slices"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// decodeChatFast decodes a chat request body without reflection. Clients
// send the same few fields on every call, and encoding/json's reflection
// (and its second pass over each message's content in messageText) cost a
// fifth of a request's CPU. It handles the common shape only: a known member
// name written exactly, each at most once, with a value of the field's type.
// Anything else — an unknown or duplicate name, a name encoding/json would
// match case-insensitively, a type error, a string it would repair, trailing
// data — returns false and leaves req untouched, and the caller decodes with
// encoding/json, whose result or error then stands. When it returns true,
// req is what encoding/json would have decoded, except that a message whose
// content is a string has it decoded in text, with Content left nil.
// FuzzDecodeChatFast holds it to that on arbitrary input.
func decodeChatFast(body []byte, req *chatRequest) bool {
	d := jsonDec{jsonfast.Scanner{B: body}}
	var r chatRequest
	if !d.chatRequest(&r) || !d.End() {
		return false
	}
	*req = r
	return true
}

// chatRequest reads the request object.
func (d *jsonDec) chatRequest(r *chatRequest) bool {
	return d.object(func(k []byte) bool { return d.chatField(r, k) })
}

// chatField reads the value of member k of a chat request.
func (d *jsonDec) chatField(r *chatRequest, k []byte) bool {
	f := &r.samplingFields
	switch string(k) {
	case "model":
		return d.strField(&f.Model)
	case "messages":
		return d.messages(&r.Messages)
	case "tools":
		return d.tools(&r.Tools)
	case "tool_choice":
		return d.rawField(&r.ToolChoice)
	case "max_tokens":
		return d.intPtr(&f.MaxTokens)
	case "max_completion_tokens":
		return d.intPtr(&r.MaxCompletionTokens)
	case "n":
		return d.intPtr(&f.N)
	case "temperature":
		return d.floatPtr(&f.Temperature)
	case "top_p":
		return d.floatPtr(&f.TopP)
	case "top_k":
		return d.intPtr(&f.TopK)
	case "min_p":
		return d.floatPtr(&f.MinP)
	case "seed":
		if d.Null() {
			return true
		}
		v, ok := d.Int64()
		f.Seed = &v
		return ok
	case "stop":
		return d.stop(&f.Stop)
	case "stream":
		return d.boolField(&f.Stream)
	case "logprobs":
		return d.boolField(&r.Logprobs)
	case "top_logprobs":
		return d.intPtr(&r.TopLogprobs)
	case "return_token_ids":
		return d.boolField(&f.ReturnTokenIDs)
	case "return_tokens_as_token_ids":
		return d.boolField(&f.ReturnTokensAsIDs)
	case "return_prompt_token_ids":
		return d.boolField(&f.ReturnPromptTokenIDs)
	case "return_meta_info":
		return d.boolField(&f.ReturnMetaInfo)
	case "add_generation_prompt":
		return d.boolPtr(&r.AddGenerationPrompt)
	case "parallel_tool_calls":
		return d.boolPtr(&r.ParallelToolCalls)
	case "skip_special_tokens":
		return d.boolPtr(&f.SkipSpecialTokens)
	case "chat_template_kwargs":
		// A map of anything: encoding/json decodes the member's text exactly
		// as it would in place, since the map starts out nil.
		raw, ok := d.SkipValue()
		return ok && json.Unmarshal(raw, &r.ChatTemplateKwargs) == nil
	}
	return false
}

// fieldSet records the member names of one object, to refuse duplicates
// (encoding/json merges some of them). Every name a fast decoder accepts is
// one of its known names, so a fixed array holds them all.
type fieldSet struct {
	names [32][]byte
	n     int
}

func (s *fieldSet) add(k []byte) bool {
	if s.n == len(s.names) {
		return false
	}
	for _, seen := range s.names[:s.n] {
		if string(seen) == string(k) {
			return false
		}
	}
	s.names[s.n] = k
	s.n++
	return true
}

// strField reads a string; null leaves it unchanged, as encoding/json does.
func (d *jsonDec) strField(p *string) bool {
	if d.Null() {
		return true
	}
	v, ok := d.Text()
	*p = v
	return ok
}

// strPtr reads a string pointer; null sets it to nil.
func (d *jsonDec) strPtr(p **string) bool {
	if d.Null() {
		*p = nil
		return true
	}
	v, ok := d.Text()
	*p = &v
	return ok
}

// boolField reads a bool; null leaves it unchanged.
func (d *jsonDec) boolField(p *bool) bool {
	if d.Null() {
		return true
	}
	v, ok := d.Bool()
	*p = v
	return ok
}

// boolPtr reads a bool pointer; null sets it to nil.
func (d *jsonDec) boolPtr(p **bool) bool {
	if d.Null() {
		*p = nil
		return true
	}
	v, ok := d.Bool()
	*p = &v
	return ok
}

// intPtr reads an int pointer; null sets it to nil.
func (d *jsonDec) intPtr(p **int) bool {
	if d.Null() {
		*p = nil
		return true
	}
	v, ok := d.Int()
	*p = &v
	return ok
}

// floatPtr reads a float64 pointer; null sets it to nil.
func (d *jsonDec) floatPtr(p **float64) bool {
	if d.Null() {
		*p = nil
		return true
	}
	v, ok := d.Float()
	*p = &v
	return ok
}

// rawField reads any value into a json.RawMessage: a copy of its text,
// null included, as json.RawMessage's UnmarshalJSON keeps it.
func (d *jsonDec) rawField(p *json.RawMessage) bool {
	raw, ok := d.SkipValue()
	*p = slices.Clone(raw)
	return ok
}

// stop reads a stop field as stopList.UnmarshalJSON does: null, a string or
// a list of strings.
func (d *jsonDec) stop(p *stopList) bool {
	switch d.Peek() {
	case 'n':
		*p = nil
		return d.Null()
	case '"':
		v, ok := d.Text()
		*p = stopList{v}
		return ok
	case '[':
		d.I++
		out := stopList{}
		if d.Eat(']') {
			*p = out
			return true
		}
		for {
			v, ok := d.Text()
			if !ok {
				return false
			}
			out = append(out, v)
			if d.Eat(']') {
				*p = out
				return true
			}
			if !d.Eat(',') {
				return false
			}
		}
	}
	return false
}

// list reads a JSON list, calling elem for each element; null is a nil
// list and [] an empty one, as encoding/json decodes slices. Null elements
// are refused (encoding/json keeps a zero element for them).
func list[T any](d *jsonDec, p *[]T, elem func(*T) bool) bool {
	if d.Null() {
		*p = nil
		return true
	}
	if !d.Eat('[') {
		return false
	}
	out := make([]T, 0, 4)
	if d.Eat(']') {
		*p = out
		return true
	}
	for {
		if d.Peek() == 'n' {
			return false
		}
		out = append(out, *new(T))
		if !elem(&out[len(out)-1]) {
			return false
		}
		if d.Eat(']') {
			*p = out
			return true
		}
		if !d.Eat(',') {
			return false
		}
	}
}

// object reads a JSON object, calling member for each member; member
// reports false for a name it does not know. Duplicate names are refused.
func (d *jsonDec) object(member func(k []byte) bool) bool {
	if !d.Eat('{') {
		return false
	}
	if d.Eat('}') {
		return true
	}
	var seen fieldSet
	for {
		k, ok := d.Key()
		if !ok || !seen.add(k) || !member(k) {
			return false
		}
		if d.Eat('}') {
			return true
		}
		if !d.Eat(',') {
			return false
		}
	}
}

// messages reads the messages list.
func (d *jsonDec) messages(p *[]wireMessage) bool {
	return list(d, p, d.message)
}

// message reads one chat message. A string content is decoded once here
// and kept in text instead of Content, whose only reader is messageText.
func (d *jsonDec) message(m *wireMessage) bool {
	return d.object(func(k []byte) bool {
		switch string(k) {
		case "role":
			return d.strField(&m.Role)
		case "content":
			if d.Peek() == '"' {
				v, ok := d.Text()
				m.text = &v
				return ok
			}
			return d.rawField(&m.Content)
		case "name":
			return d.strField(&m.Name)
		case "tool_calls":
			return list(d, &m.ToolCalls, d.toolCall)
		case "tool_call_id":
			return d.strField(&m.ToolCallID)
		case "reasoning":
			return d.strPtr(&m.Reasoning)
		case "reasoning_content":
			return d.strPtr(&m.ReasoningContent)
		case "refusal":
			return d.strPtr(&m.Refusal)
		}
		return false
	})
}

// toolCall reads one tool call of an assistant message.
func (d *jsonDec) toolCall(tc *wireToolCall) bool {
	return d.object(func(k []byte) bool {
		switch string(k) {
		case "id":
			return d.strField(&tc.ID)
		case "type":
			return d.strField(&tc.Type)
		case "index":
			return d.intPtr(&tc.Index)
		case "function":
			return d.function(&tc.Function)
		}
		return false
	})
}

// tools reads the tools list.
func (d *jsonDec) tools(p *[]wireTool) bool {
	return list(d, p, func(t *wireTool) bool {
		return d.object(func(k []byte) bool {
			switch string(k) {
			case "type":
				return d.strField(&t.Type)
			case "function":
				return d.function(&t.Function)
			}
			return false
		})
	})
}

// function reads the function of a tool or a tool call. A null function
// is refused: encoding/json leaves the struct as it was.
func (d *jsonDec) function(f *wireFunction) bool {
	return d.object(func(k []byte) bool {
		switch string(k) {
		case "name":
			return d.strField(&f.Name)
		case "description":
			return d.strField(&f.Description)
		case "parameters":
			return d.rawField(&f.Parameters)
		case "arguments":
			return d.rawField(&f.Arguments)
		case "strict":
			return d.boolPtr(&f.Strict)
		}
		return false
	})
}
