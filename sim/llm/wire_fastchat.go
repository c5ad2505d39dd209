package llm

import (
	"encoding/json"
	"slices"
	"strconv"
)

// decodeChatFast decodes a chat request body with the sim's own reader
// (reqReader) instead of encoding/json, whose reflection, and messageText's
// second pass over every message's content, more than doubled the CPU of a
// call with a long conversation. It takes only the shape clients send on
// every turn: member names known to chatRequest written exactly, each once,
// with values of the field's type. Anything else (an unknown, repeated or
// differently cased name, a name with an escape or a byte outside ASCII, a
// type error, trailing data) makes it return false with req left as it
// was, and the caller decodes the body with encoding/json, whose result or
// error stands. When it returns true, req holds what encoding/json would
// have decoded, except that a message whose content is a string has it in
// text, already decoded, with Content nil. FuzzDecodeChatFast holds it to
// that on any input.
func decodeChatFast(body []byte, req *chatRequest) bool {
	r := reqReader{b: body}
	var out chatRequest
	r.object(func(name []byte) { r.chatMember(&out, name) })
	if r.bad || !r.atEnd() {
		return false
	}
	*req = out
	return true
}

// chatMember reads the value of the chat request member name into q.
func (r *reqReader) chatMember(q *chatRequest, name []byte) {
	f := &q.samplingFields
	switch string(name) {
	case "model":
		r.stringField(&f.Model)
	case "messages":
		readList(r, &q.Messages, r.message)
	case "tools":
		readList(r, &q.Tools, r.tool)
	case "tool_choice":
		r.rawField(&q.ToolChoice)
	case "max_tokens":
		r.intPtr(&f.MaxTokens)
	case "max_completion_tokens":
		r.intPtr(&q.MaxCompletionTokens)
	case "n":
		r.intPtr(&f.N)
	case "temperature":
		r.floatPtr(&f.Temperature)
	case "top_p":
		r.floatPtr(&f.TopP)
	case "top_k":
		r.intPtr(&f.TopK)
	case "min_p":
		r.floatPtr(&f.MinP)
	case "seed":
		if r.null() {
			f.Seed = nil
			return
		}
		v := r.integer(64)
		f.Seed = &v
	case "stop":
		r.stop(&f.Stop)
	case "stream":
		r.boolField(&f.Stream)
	case "logprobs":
		r.boolField(&q.Logprobs)
	case "top_logprobs":
		r.intPtr(&q.TopLogprobs)
	case "return_token_ids":
		r.boolField(&f.ReturnTokenIDs)
	case "return_tokens_as_token_ids":
		r.boolField(&f.ReturnTokensAsIDs)
	case "return_prompt_token_ids":
		r.boolField(&f.ReturnPromptTokenIDs)
	case "return_meta_info":
		r.boolField(&f.ReturnMetaInfo)
	case "add_generation_prompt":
		r.boolPtr(&q.AddGenerationPrompt)
	case "parallel_tool_calls":
		r.boolPtr(&q.ParallelToolCalls)
	case "skip_special_tokens":
		r.boolPtr(&f.SkipSpecialTokens)
	case "chat_template_kwargs":
		// A map of any values: encoding/json decodes the member's text as it
		// would have in place, the map being nil until then.
		raw := r.skip()
		if !r.bad && json.Unmarshal(raw, &q.ChatTemplateKwargs) != nil {
			r.refuse()
		}
	default:
		r.refuse()
	}
}

// message reads one chat message. A string content is decoded here, into
// text, and Content stays nil: its only reader, messageText, would decode
// it a second time.
func (r *reqReader) message(m *wireMessage) {
	r.object(func(name []byte) {
		switch string(name) {
		case "role":
			r.stringField(&m.Role)
		case "content":
			if r.peek() == '"' {
				s := r.text()
				m.text = &s
				return
			}
			r.rawField(&m.Content)
		case "name":
			r.stringField(&m.Name)
		case "tool_calls":
			readList(r, &m.ToolCalls, r.toolCall)
		case "tool_call_id":
			r.stringField(&m.ToolCallID)
		case "reasoning":
			r.stringPtr(&m.Reasoning)
		case "reasoning_content":
			r.stringPtr(&m.ReasoningContent)
		case "refusal":
			r.stringPtr(&m.Refusal)
		default:
			r.refuse()
		}
	})
}

// toolCall reads one tool call of an assistant message.
func (r *reqReader) toolCall(tc *wireToolCall) {
	r.object(func(name []byte) {
		switch string(name) {
		case "id":
			r.stringField(&tc.ID)
		case "type":
			r.stringField(&tc.Type)
		case "index":
			r.intPtr(&tc.Index)
		case "function":
			r.function(&tc.Function)
		default:
			r.refuse()
		}
	})
}

// tool reads one entry of the request's tools.
func (r *reqReader) tool(t *wireTool) {
	r.object(func(name []byte) {
		switch string(name) {
		case "type":
			r.stringField(&t.Type)
		case "function":
			r.function(&t.Function)
		default:
			r.refuse()
		}
	})
}

// function reads the function of a tool or of a tool call; null is
// refused (encoding/json leaves the struct as it was).
func (r *reqReader) function(f *wireFunction) {
	r.object(func(name []byte) {
		switch string(name) {
		case "name":
			r.stringField(&f.Name)
		case "description":
			r.stringField(&f.Description)
		case "parameters":
			r.rawField(&f.Parameters)
		case "arguments":
			r.rawField(&f.Arguments)
		case "strict":
			r.boolPtr(&f.Strict)
		default:
			r.refuse()
		}
	})
}

// The field readers below treat null as encoding/json does: it leaves a
// plain value as it was and sets a pointer to nil.

func (r *reqReader) stringField(p *string) {
	if !r.null() {
		*p = r.text()
	}
}

func (r *reqReader) stringPtr(p **string) {
	if r.null() {
		*p = nil
		return
	}
	v := r.text()
	*p = &v
}

func (r *reqReader) boolField(p *bool) {
	if !r.null() {
		*p = r.boolean()
	}
}

func (r *reqReader) boolPtr(p **bool) {
	if r.null() {
		*p = nil
		return
	}
	v := r.boolean()
	*p = &v
}

func (r *reqReader) intPtr(p **int) {
	if r.null() {
		*p = nil
		return
	}
	v := int(r.integer(strconv.IntSize))
	*p = &v
}

func (r *reqReader) floatPtr(p **float64) {
	if r.null() {
		*p = nil
		return
	}
	v := r.float()
	*p = &v
}

// rawField keeps a copy of any value's text, null included, as
// json.RawMessage's UnmarshalJSON does.
func (r *reqReader) rawField(p *json.RawMessage) {
	raw := r.skip()
	*p = slices.Clone(raw)
}

// stop reads a stop field as stopList.UnmarshalJSON does: null, a string,
// or a list of strings ([] being an empty list, not nil).
func (r *reqReader) stop(p *stopList) {
	switch r.peek() {
	case 'n':
		if !r.null() {
			r.refuse()
		}
		*p = nil
	case '"':
		*p = stopList{r.text()}
	default:
		out := stopList{}
		r.expect('[')
		if r.bad || r.take(']') {
			*p = out
			return
		}
		for !r.bad {
			// null elements decode to "" there; refused here with the rest.
			out = append(out, r.text())
			if !r.take(',') {
				r.expect(']')
				break
			}
		}
		*p = out
	}
}
