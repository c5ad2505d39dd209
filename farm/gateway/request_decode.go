package gateway

import (
	"encoding/json"
	"net/http"
	"reflect"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
	"github.com/mgrpo/mgrpo/llm"
)

// Fast decoding of chat requests.
//
// Every call of an agent carries its whole history, and decoding it with
// encoding/json was most of what the gateway costs the farm beyond the
// built-in agents. fastChatRequest fills the same chatRequest with the
// client's strict scanner (internal/jsonfast), under the client's rule for
// its fast decoders: a key that names a field only by case folding, an
// escaped or non-ASCII key, a duplicate field, a value of another type or
// shape than its field's, or any JSON error makes it give up, and the body
// goes to encoding/json, whose result or error is the answer. tools, a
// small member of free-form JSON schemas, is always handed to encoding/json
// on its own. Each body given up is counted by reason
// (mgrpo_gateway_request_decode_fallback_total; the reasons are the
// client's, llm.FallbackSyntax and after); FuzzFastChatRequest checks the
// agreement.

// Field names encoding/json matches a chat request's keys against.
var (
	chatRequestFields   = jsonfast.FieldNames(reflect.TypeFor[chatRequest]())
	streamOptionsFields = jsonfast.FieldNames(reflect.TypeOf(chatRequest{}.StreamOptions).Elem())
	wireMessageFields   = jsonfast.FieldNames(reflect.TypeFor[wireMessage]())
	toolCallFields      = jsonfast.FieldNames(reflect.TypeFor[openai.ToolCall]())
	functionCallFields  = jsonfast.FieldNames(reflect.TypeFor[openai.FunctionCall]())
)

// requestFallbackReasons are the reasons fastChatRequest gives up for.
var requestFallbackReasons = []string{llm.FallbackSyntax, llm.FallbackShape, llm.FallbackEscapedKey,
	llm.FallbackFoldedKey, llm.FallbackDuplicateKey}

// decodeChatRequest decodes a chat request body into req as json.Unmarshal
// does, through fastChatRequest when it can; the fallback's reason is
// counted in met (which may be nil). req's raw members (content, stop)
// alias body.
//
// Either way req.Tools comes back canonical (see canonicalTools), from
// lists when it holds the request's.
func decodeChatRequest(body []byte, req *chatRequest, lists *toolLists, met *Metrics) error {
	why := fastChatRequest(body, req, lists)
	if why == "" {
		if req.toolsRaw != nil && !req.toolsKnown {
			req.Tools = canonicalTools(req.Tools)
			lists.store(req.toolsRaw, req.Tools)
		}
		return nil
	}
	met.fallback(why)
	*req = chatRequest{}
	if err := json.Unmarshal(body, req); err != nil {
		return err
	}
	req.Tools = canonicalTools(req.Tools)
	return nil
}

// decodeChatBody reads a chat request body into req (see readBody).
func (g *Gateway) decodeChatBody(w http.ResponseWriter, r *http.Request, req *chatRequest) bool {
	return readBody(w, r, func(data []byte) error { return decodeChatRequest(data, req, &g.tools, g.cfg.Metrics) })
}

// reqScan is the request decoder's scanner: jsonfast's, with the reason of
// the first refusal.
type reqScan struct {
	jsonfast.Scanner
	why string
}

func (s *reqScan) fail(reason string) bool {
	if s.why == "" {
		s.why = reason
	}
	return false
}

// once marks bit in seen; a second occurrence of a field makes the decoder
// give up.
func (s *reqScan) once(seen *uint, bit uint) bool {
	if *seen&bit != 0 {
		return s.fail(llm.FallbackDuplicateKey)
	}
	*seen |= bit
	return true
}

// members walks an object, calling member with each key to consume its
// value; member returns false to give up.
func (s *reqScan) members(member func(key []byte) bool) bool {
	if !s.Eat('{') {
		return false
	}
	if s.Eat('}') {
		return true
	}
	for {
		start := s.I
		key, ok := s.Key()
		if !ok {
			s.I = start
			if _, _, ok := s.Str(); ok {
				// A valid name Key refuses: an escape or a byte outside ASCII.
				return s.fail(llm.FallbackEscapedKey)
			}
			return false
		}
		if !member(key) {
			return false
		}
		if s.Eat(',') {
			continue
		}
		return s.Eat('}')
	}
}

// other consumes the value of a key the decoder has no case for: skipped,
// as encoding/json ignores it, unless it names a field by case folding.
func (s *reqScan) other(key []byte, fields []string) bool {
	if jsonfast.FoldsTo(key, fields) {
		return s.fail(llm.FallbackFoldedKey)
	}
	return s.Skip(0)
}

// str decodes a string into *dst; null leaves it.
func (s *reqScan) str(dst *string) bool {
	if s.Null() {
		return true
	}
	v, ok := s.Text()
	if ok {
		*dst = v
	}
	return ok
}

// raw stores any value's text in *dst, aliasing B, as json.RawMessage
// holds it (null included).
func (s *reqScan) raw(dst *json.RawMessage) bool {
	v, ok := s.SkipValue()
	if ok {
		*dst = v
	}
	return ok
}

// boolean decodes true or false into *dst; null leaves it.
func (s *reqScan) boolean(dst *bool) bool {
	if s.Null() {
		return true
	}
	v, ok := s.Bool()
	if ok {
		*dst = v
	}
	return ok
}

// intPtr decodes an integer into a new *dst; null makes it nil.
func (s *reqScan) intPtr(dst **int) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	v, ok := s.Int()
	if ok {
		*dst = &v
	}
	return ok
}

// floatPtr decodes a number into a new *dst; null makes it nil.
func (s *reqScan) floatPtr(dst **float64) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	v, ok := s.Float()
	if ok {
		*dst = &v
	}
	return ok
}

// fastChatRequest decodes body into req, which must be zero, as
// json.Unmarshal(body, req) would, and returns ""; otherwise it returns why
// it gave up (a FallbackX reason), leaving req in no particular state. It
// also sets req.toolsRaw to the tools member's JSON, and takes the list
// from lists (which may be nil) when it holds it (req.toolsKnown).
func fastChatRequest(body []byte, req *chatRequest, lists *toolLists) string {
	s := reqScan{Scanner: jsonfast.Scanner{B: body}}
	var seen uint
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "messages":
			return s.once(&seen, 1) && s.messages(&req.Messages)
		case "model":
			return s.once(&seen, 2) && s.str(&req.Model)
		case "tools":
			if !s.once(&seen, 4) {
				return false
			}
			v, ok := s.SkipValue()
			if !ok {
				return false
			}
			req.toolsRaw = v
			if t, ok := lists.lookup(v); ok {
				req.Tools, req.toolsKnown = t, true
				return true
			}
			// The member alone decodes as it does inside the request.
			return json.Unmarshal(v, &req.Tools) == nil
		case "stream":
			return s.once(&seen, 8) && s.boolean(&req.Stream)
		case "stream_options":
			if !s.once(&seen, 16) {
				return false
			}
			if s.Null() {
				req.StreamOptions = nil
				return true
			}
			req.StreamOptions = &struct {
				IncludeUsage bool `json:"include_usage"`
			}{}
			var oseen uint
			return s.members(func(key []byte) bool {
				if string(key) == "include_usage" {
					return s.once(&oseen, 1) && s.boolean(&req.StreamOptions.IncludeUsage)
				}
				return s.other(key, streamOptionsFields)
			})
		case "temperature":
			return s.once(&seen, 32) && s.floatPtr(&req.Temperature)
		case "top_p":
			return s.once(&seen, 64) && s.floatPtr(&req.TopP)
		case "max_tokens":
			return s.once(&seen, 128) && s.intPtr(&req.MaxTokens)
		case "max_completion_tokens":
			return s.once(&seen, 256) && s.intPtr(&req.MaxCompletionTokens)
		case "n":
			return s.once(&seen, 512) && s.intPtr(&req.N)
		case "seed":
			if !s.once(&seen, 1024) {
				return false
			}
			if s.Null() {
				req.Seed = nil
				return true
			}
			v, ok := s.Int64()
			req.Seed = &v
			return ok
		case "stop":
			return s.once(&seen, 2048) && s.raw(&req.Stop)
		}
		return s.other(key, chatRequestFields)
	})
	switch {
	case ok && s.End():
		return ""
	case s.why != "":
		return s.why
	case json.Valid(body):
		return llm.FallbackShape
	}
	return llm.FallbackSyntax
}

// messages consumes the messages array (null is nil); a null message,
// which encoding/json decodes as an empty one, is refused.
func (s *reqScan) messages(dst *[]wireMessage) bool {
	if s.Null() {
		return true
	}
	if !s.Eat('[') {
		return false
	}
	msgs := make([]wireMessage, 0, 8)
	if !s.Eat(']') {
		for {
			msgs = append(msgs, wireMessage{})
			if !s.message(&msgs[len(msgs)-1]) {
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
	*dst = msgs
	return true
}

// message consumes one message.
func (s *reqScan) message(m *wireMessage) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "role":
			return s.once(&seen, 1) && s.str(&m.Role)
		case "content":
			return s.once(&seen, 2) && s.raw(&m.Content)
		case "name":
			return s.once(&seen, 4) && s.str(&m.Name)
		case "tool_calls":
			return s.once(&seen, 8) && s.toolCalls(&m.ToolCalls)
		case "tool_call_id":
			return s.once(&seen, 16) && s.str(&m.ToolCallID)
		case "reasoning_content":
			return s.once(&seen, 32) && s.str(&m.ReasoningContent)
		}
		return s.other(key, wireMessageFields)
	})
}

// toolCalls consumes a message's tool calls (null is nil); a null element
// is refused.
func (s *reqScan) toolCalls(dst *[]openai.ToolCall) bool {
	if s.Null() {
		return true
	}
	if !s.Eat('[') {
		return false
	}
	calls := []openai.ToolCall{}
	if !s.Eat(']') {
		for {
			calls = append(calls, openai.ToolCall{})
			if !s.toolCall(&calls[len(calls)-1]) {
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

// toolCall consumes one tool call.
func (s *reqScan) toolCall(tc *openai.ToolCall) bool {
	var seen uint
	return s.members(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.once(&seen, 1) && s.str(&tc.ID)
		case "type":
			return s.once(&seen, 2) && s.str((*string)(&tc.Type))
		case "function":
			if !s.once(&seen, 4) {
				return false
			}
			if s.Null() {
				return true
			}
			var fseen uint
			return s.members(func(key []byte) bool {
				switch string(key) {
				case "name":
					return s.once(&fseen, 1) && s.str(&tc.Function.Name)
				case "arguments":
					return s.once(&fseen, 2) && s.str(&tc.Function.Arguments)
				}
				return s.other(key, functionCallFields)
			})
		case "index":
			return s.once(&seen, 8) && s.intPtr(&tc.Index)
		}
		return s.other(key, toolCallFields)
	})
}
