package llm

import (
	"bytes"
	"encoding/json"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// plainMessage is openai.ChatCompletionMessage with the JSON tags its
// MarshalJSON uses for a message without MultiContent: the layout
// appendMessages writes.
type plainMessage struct {
	Role             string                   `json:"role"`
	Content          string                   `json:"content,omitempty"`
	Refusal          string                   `json:"refusal,omitempty"`
	MultiContent     []openai.ChatMessagePart `json:"-"`
	Name             string                   `json:"name,omitempty"`
	ReasoningContent string                   `json:"reasoning_content,omitempty"`
	FunctionCall     *openai.FunctionCall     `json:"function_call,omitempty"`
	ToolCalls        []openai.ToolCall        `json:"tool_calls,omitempty"`
	ToolCallID       string                   `json:"tool_call_id,omitempty"`
}

// The conversions fail to compile when go-openai adds a field the
// hand-written encoder in encode_message.go, and the copy a PromptPrefix
// compares messages with (sentMessage, encode_prefix.go), would miss.
var (
	_ = plainMessage(openai.ChatCompletionMessage{})
	_ = plainToolCall(openai.ToolCall{})
	_ = plainFunctionCall(openai.FunctionCall{})
)

// plainToolCall and plainFunctionCall are the field lists
// appendToolCall and appendFunctionCall write.
type (
	plainToolCall struct {
		Index    *int
		ID       string
		Type     openai.ToolType
		Function openai.FunctionCall
	}
	plainFunctionCall struct {
		Name      string
		Arguments string
	}
)

// encodeChatRequest returns json.Marshal(cr), byte for byte, faster. tools,
// when not nil, caches the encoding of cr.Tools.
func encodeChatRequest(cr ChatRequest, tools *toolsCache) ([]byte, error) {
	return encodeChatRequestPrefix(cr, tools, nil)
}

// encodeChatRequestPrefix is encodeChatRequest reusing, when prefix is not
// nil, the encoding of the leading messages the trajectory's previous
// request had too (see PromptPrefix); the bytes are the same without it.
func encodeChatRequestPrefix(cr ChatRequest, tools *toolsCache, prefix *PromptPrefix) ([]byte, error) {
	if b, ok := fastChatRequestPrefix(cr, tools, prefix); ok {
		return b, nil
	}
	return json.Marshal(cr)
}

// reqScratch holds fastChatRequest's reusable buffers. The request body
// itself is a fresh slice: the HTTP transport may still read it after the
// call returns.
type reqScratch struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	msgs []byte
}

var reqScratchPool = sync.Pool{New: func() any {
	sc := new(reqScratch)
	sc.enc = json.NewEncoder(&sc.buf)
	return sc
}}

// toolsStandIn takes the place of a cached tool list when the rest of a
// request is encoded: it keeps the tools member where encoding/json puts
// it, and its value is replaced by the cached bytes.
var toolsStandIn = []openai.Tool{{Type: "function"}}

// fastChatRequest is encodeChatRequest's fast path. encoding/json encodes
// the request without its messages (as null) and with a stand-in for a
// cached tool list; the messages, written by appendMessages, and the cached
// tools then replace those two values. Anything else — no messages, a
// message with multi-part content (or both content kinds, an error), an
// encoding error — is left to json.Marshal (ok false).
func fastChatRequest(cr ChatRequest, tools *toolsCache) ([]byte, bool) {
	return fastChatRequestPrefix(cr, tools, nil)
}

// fastChatRequestPrefix is fastChatRequest with the messages written by
// prefix.appendMessages when prefix is not nil.
func fastChatRequestPrefix(cr ChatRequest, tools *toolsCache, prefix *PromptPrefix) ([]byte, bool) {
	msgs := cr.Messages
	if msgs == nil {
		return nil, false
	}
	sc := reqScratchPool.Get().(*reqScratch)
	defer func() {
		if sc.buf.Cap() <= maxScratch && cap(sc.msgs) <= maxScratch {
			reqScratchPool.Put(sc)
		}
	}()
	// msgsJSON is the scratch buffer, or the prefix's own copy: either
	// way splice copies it into the fresh body.
	var (
		msgsJSON []byte
		ok       bool
	)
	if prefix != nil {
		msgsJSON, ok = prefix.appendMessages(msgs)
	} else {
		sc.msgs, ok = appendMessages(sc.msgs[:0], msgs)
		msgsJSON = sc.msgs
	}
	if !ok {
		return nil, false
	}
	var toolsJSON []byte
	if tools != nil {
		if toolsJSON, ok = tools.encode(cr.Tools); ok {
			cr.Tools = toolsStandIn
		}
	}
	cr.Messages = nil
	sc.buf.Reset()
	// Encoder.Encode writes what json.Marshal returns, and a newline.
	if sc.enc.Encode(cr) != nil {
		return nil, false
	}
	head := sc.buf.Bytes()
	head = head[:len(head)-1]
	// Find the two values among the top-level members: the head is small,
	// and its member order is encoding/json's, not assumed here.
	msgsAt, toolsAt := span{with: msgsJSON}, span{with: toolsJSON}
	s := jscan{Scanner: jsonfast.Scanner{B: head}}
	if !s.members(func(key []byte) bool {
		s.WS()
		start := s.I
		if !s.Skip(0) {
			return false
		}
		switch string(key) {
		case "messages":
			msgsAt.start, msgsAt.end = start, s.I
		case "tools":
			toolsAt.start, toolsAt.end = start, s.I
		}
		return true
	}) || msgsAt.end == 0 || toolsJSON != nil && toolsAt.end == 0 {
		return nil, false
	}
	repl := []span{msgsAt}
	if toolsJSON != nil {
		repl = append(repl, toolsAt)
		if toolsAt.start < msgsAt.start {
			repl[0], repl[1] = toolsAt, msgsAt
		}
	}
	return splice(head, repl, len(msgsJSON)+len(toolsJSON)), true
}

// span is a value in a request's head and what replaces it.
type span struct {
	start, end int
	with       []byte
}

// splice returns a fresh copy of head with the spans, in order, replaced;
// extra is the room the replacements need.
func splice(head []byte, spans []span, extra int) []byte {
	out := make([]byte, 0, len(head)+extra)
	last := 0
	for _, r := range spans {
		out = append(out, head[last:r.start]...)
		out = append(out, r.with...)
		last = r.end
	}
	return append(out, head[last:]...)
}
