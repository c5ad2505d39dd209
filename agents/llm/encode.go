package llm

import (
	"bytes"
	"encoding/json"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// plainMessage is openai.ChatCompletionMessage with the JSON tags its
// MarshalJSON uses for a message without MultiContent. Converting to it
// (the compiler checks the field lists match) encodes a message to the same
// bytes without the Marshaler round trip: encoding/json re-scans and
// compacts every Marshaler's output, which was a third of a call's CPU with
// an 8 KB history.
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

// encodeChatRequest returns json.Marshal(cr), byte for byte, faster.
func encodeChatRequest(cr ChatRequest) ([]byte, error) {
	if b, ok := fastChatRequest(cr); ok {
		return b, nil
	}
	return json.Marshal(cr)
}

// reqScratch holds fastChatRequest's reusable buffers. The request body
// itself is a fresh slice: the HTTP transport may still read it after the
// call returns.
type reqScratch struct {
	buf   bytes.Buffer
	enc   *json.Encoder
	plain []plainMessage
}

var reqScratchPool = sync.Pool{New: func() any {
	sc := new(reqScratch)
	sc.enc = json.NewEncoder(&sc.buf)
	return sc
}}

// fastChatRequest is encodeChatRequest's fast path. The request is encoded
// without its messages, which encoding/json writes as
// {"model":…,"messages":null,…}, and the messages, encoded as
// plainMessages, are put in place of the null. Anything else — no messages,
// a message with multi-part content (or both content kinds, an error), an
// encoding error, a layout other than model then messages — is left to
// json.Marshal (ok false).
func fastChatRequest(cr ChatRequest) ([]byte, bool) {
	msgs := cr.Messages
	if msgs == nil {
		return nil, false
	}
	sc := reqScratchPool.Get().(*reqScratch)
	defer func() {
		clear(sc.plain)
		if sc.buf.Cap() <= maxScratch && cap(sc.plain) <= 4096 {
			reqScratchPool.Put(sc)
		}
	}()
	sc.buf.Reset()
	sc.plain = sc.plain[:0]
	if sc.plain == nil {
		// A fresh scratch slice is nil, which would encode an empty
		// message list as null instead of [].
		sc.plain = []plainMessage{}
	}
	for i := range msgs {
		if msgs[i].MultiContent != nil && (len(msgs[i].MultiContent) > 0 || msgs[i].Content != "") {
			return nil, false
		}
		sc.plain = append(sc.plain, plainMessage(msgs[i]))
	}
	// Encoder.Encode writes what json.Marshal returns, and a newline.
	cr.Messages = nil
	if sc.enc.Encode(cr) != nil {
		return nil, false
	}
	headLen := sc.buf.Len() - 1
	if sc.enc.Encode(sc.plain) != nil {
		return nil, false
	}
	b := sc.buf.Bytes()
	head, arr := b[:headLen], b[headLen+1:len(b)-1]
	const modelKey, messagesNull = `{"model":`, `,"messages":null`
	if !bytes.HasPrefix(head, []byte(modelKey)) {
		return nil, false
	}
	s := jscan{b: head, i: len(modelKey)}
	if _, _, ok := s.str(); !ok || !bytes.HasPrefix(head[s.i:], []byte(messagesNull)) {
		return nil, false
	}
	at := s.i + len(messagesNull) - len("null")
	out := make([]byte, 0, len(head)-len("null")+len(arr))
	out = append(out, head[:at]...)
	out = append(out, arr...)
	out = append(out, head[at+len("null"):]...)
	return out, true
}
