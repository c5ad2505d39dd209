package llm

import (
	"encoding/json"
	"errors"

	openai "github.com/sashabaranov/go-openai"
)

// vllmChunk is one chat.completion.chunk of a vLLM stream, with the fields
// a Turn is made of: the prompt ids on the first chunk (return_token_ids),
// and per choice the message delta, the delta's logprob entries and token
// ids, and on the last chunk the finish and stop reasons; usage on the
// trailing chunk (stream_options.include_usage). An error the server hit
// mid-stream arrives as an event with an error member, or (older servers)
// as an error object.
type vllmChunk struct {
	Object         string            `json:"object"`
	Message        string            `json:"message"`
	Error          json.RawMessage   `json:"error"`
	PromptTokenIDs []int32           `json:"prompt_token_ids"`
	Choices        []vllmChunkChoice `json:"choices"`
	Usage          *openai.Usage     `json:"usage"`
	Metadata       *ResponseMetadata `json:"metadata"`
}

type vllmChunkChoice struct {
	Index    int       `json:"index"`
	Delta    vllmDelta `json:"delta"`
	Logprobs *struct {
		Content []chunkLogprobEntry `json:"content"`
	} `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"`
	TokenIDs     []int32         `json:"token_ids"`
}

// vllmDelta is a DeltaMessage. vLLM writes reasoning text as "reasoning"
// (newer) or "reasoning_content" (older), some versions both with the same
// text; each field is assembled on its own, as the unstreamed message's.
type vllmDelta struct {
	Role             string          `json:"role"`
	Content          *string         `json:"content"`
	Reasoning        *string         `json:"reasoning"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

// toolCallDelta is a piece of one tool call: the call at Index gets the
// id, type and name where a delta has them and the arguments appended.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatAssembly accumulates a streamed chat completion's first choice.
type chatAssembly struct {
	resp     ChatResponse
	ch       ChatChoice
	content  []byte
	reason   []byte
	reason2  []byte
	calls    []openai.ToolCall
	logprobs []float64
	tokens   []string
	seen     bool // a chunk for choice 0 arrived
	finished bool
	// dec decodes each event into chunk; both are reused from one event to
	// the next.
	dec   chunkDecoder
	chunk vllmChunk
}

// decodeVLLMStream assembles a vLLM chat stream into the result its
// unstreamed answer decodes to (see decodeChat): the same message,
// finish and stop reasons, usage, prompt and completion ids, and one
// logprob per logprob entry. Its errors are DecodeChatResponse's: a stream
// without a choice or a finish reason wraps ErrMalformedResponse, and an
// aborted generation returns its result with ErrAborted; a stream that
// ends before its [DONE] event returns what it carried with ErrStreamEnded,
// for a partial turn. Any event that is not a chunk (bad JSON, an error
// event) is a *DecodeError wrapping ErrMalformedResponse. wantTokens keeps
// the logprob entries' tokens. Each event goes through fastVLLMChunk; what
// it leaves to encoding/json is counted in met (which may be nil). It never
// panics.
func decodeVLLMStream(body []byte, wantTokens bool, met *Metrics) (*chatResult, error) {
	a := &chatAssembly{}
	done, err := sseEvents(body, func(data []byte) error { return a.add(body, data, wantTokens, met) })
	if err != nil {
		return nil, err
	}
	r := a.result()
	switch {
	case !done && a.seen:
		return r, streamError(body, "%w: no [DONE] event", ErrStreamEnded)
	case !done:
		return nil, streamError(body, "%w: no chunk", ErrStreamEnded)
	case !a.seen:
		return nil, streamError(body, "%w: no choices", ErrMalformedResponse)
	case r.ch.FinishReason == "abort":
		return r, &DecodeError{Err: ErrAborted}
	case r.ch.FinishReason == "" || r.ch.FinishReason == "null":
		return nil, streamError(body, "%w: choice has no finish_reason", ErrMalformedResponse)
	}
	return r, nil
}

// add folds one event's chunk into a.
func (a *chatAssembly) add(body, data []byte, wantTokens bool, met *Metrics) error {
	a.chunk = vllmChunk{}
	c := &a.chunk
	fb := a.dec.fastVLLMChunk(data, c, wantTokens)
	met.fallback(fb)
	if fb.body != "" {
		*c = vllmChunk{}
		if err := json.Unmarshal(data, c); err != nil {
			return streamError(body, "%w: event %.80q: %v", ErrMalformedResponse, data, err)
		}
	}
	if msg, ok := c.errorMessage(); ok {
		return streamError(body, "%w: error event: %s", ErrMalformedResponse, msg)
	}
	if c.PromptTokenIDs != nil {
		a.resp.PromptTokenIDs = c.PromptTokenIDs
	}
	if c.Usage != nil {
		a.resp.Usage = *c.Usage
	}
	if c.Metadata != nil {
		a.resp.Metadata = c.Metadata
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			// The client asks for one choice; others are not its sample.
			continue
		}
		if a.finished {
			return streamError(body, "%w: a chunk after the choice's finish_reason", ErrMalformedResponse)
		}
		a.seen = true
		d := &ch.Delta
		if d.Role != "" {
			a.ch.Message.Role = d.Role
		}
		if d.Content != nil {
			a.content = append(a.content, *d.Content...)
		}
		if d.Reasoning != nil {
			a.reason = append(a.reason, *d.Reasoning...)
		}
		if d.ReasoningContent != nil {
			a.reason2 = append(a.reason2, *d.ReasoningContent...)
		}
		for _, tc := range d.ToolCalls {
			if err := a.addCall(body, tc); err != nil {
				return err
			}
		}
		if ch.Logprobs != nil {
			for _, e := range ch.Logprobs.Content {
				a.logprobs = append(a.logprobs, e.Logprob)
				if wantTokens {
					a.tokens = append(a.tokens, e.Token)
				}
			}
		}
		a.ch.TokenIDs = append(a.ch.TokenIDs, ch.TokenIDs...)
		if ch.FinishReason != nil {
			a.ch.FinishReason = openai.FinishReason(*ch.FinishReason)
			a.ch.StopReason = append(json.RawMessage(nil), ch.StopReason...)
			a.finished = true
		}
	}
	return nil
}

// addCall merges a tool-call delta into the call at its index.
func (a *chatAssembly) addCall(body []byte, tc toolCallDelta) error {
	k := len(a.calls) - 1
	if tc.Index != nil {
		k = *tc.Index
	}
	switch {
	case k < 0 && tc.Index == nil:
		k = 0
		fallthrough
	case k == len(a.calls):
		a.calls = append(a.calls, openai.ToolCall{})
	case k < 0 || k > len(a.calls):
		return streamError(body, "%w: tool call index %d after %d calls", ErrMalformedResponse, k, len(a.calls))
	}
	call := &a.calls[k]
	if tc.ID != "" {
		call.ID = tc.ID
	}
	if tc.Type != "" {
		call.Type = openai.ToolType(tc.Type)
	}
	if f := tc.Function; f != nil {
		if f.Name != "" {
			call.Function.Name = f.Name
		}
		call.Function.Arguments += f.Arguments
	}
	return nil
}

// result returns the assembled response and its choice.
func (a *chatAssembly) result() *chatResult {
	a.ch.Message.Content = string(a.content)
	a.ch.Message.Reasoning = string(a.reason)
	a.ch.Message.ReasoningContent = string(a.reason2)
	// vLLM's unstreamed message always has a tool_calls list, empty when
	// the model called nothing; the assembled one decodes the same.
	a.ch.Message.ToolCalls = a.calls
	if a.calls == nil {
		a.ch.Message.ToolCalls = []openai.ToolCall{}
	}
	lps := a.logprobs
	if lps == nil {
		lps = []float64{}
	}
	a.resp.Choices = []ChatChoice{a.ch}
	return &chatResult{resp: &a.resp, ch: &a.resp.Choices[0], logprobs: lps, tokens: a.tokens}
}

// errorMessage reports an error event: {"error": {...}} or {"error": "…"}
// (newer vLLM) or {"object": "error", "message": …} (older).
func (c *vllmChunk) errorMessage() (string, bool) {
	if c.Object == "error" {
		return c.Message, true
	}
	raw := c.Error
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(raw), true
}

// isStreamEnded reports whether err is a stream that closed before its
// final event.
func isStreamEnded(err error) bool { return errors.Is(err, ErrStreamEnded) }
