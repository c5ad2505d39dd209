package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// DecodeChatResponse decodes a chat completion body and returns its first
// choice. A body that is not valid JSON, has no choices or no finish reason
// is a *DecodeError wrapping ErrMalformedResponse. A generation the server
// aborted (finish_reason "abort") returns the response and its choice, what
// was generated before the abort, together with a *DecodeError wrapping
// ErrAborted. It never panics.
func DecodeChatResponse(body []byte) (*ChatResponse, *ChatChoice, error) {
	if err := precheckBody("", body); err != nil {
		return nil, nil, &DecodeError{Err: err, Snippet: snippet(body)}
	}
	var resp ChatResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, nil, &DecodeError{Err: fmt.Errorf("%w: %v", ErrMalformedResponse, err), Snippet: snippet(body)}
	}
	if len(resp.Choices) == 0 {
		return nil, nil, &DecodeError{Err: fmt.Errorf("%w: no choices", ErrMalformedResponse), Snippet: snippet(body)}
	}
	ch := &resp.Choices[0]
	switch ch.FinishReason {
	case "abort":
		return &resp, ch, &DecodeError{Err: ErrAborted}
	case "", "null":
		return nil, nil, &DecodeError{Err: fmt.Errorf("%w: choice has no finish_reason", ErrMalformedResponse), Snippet: snippet(body)}
	}
	return &resp, ch, nil
}

// weightVersionHeader is where servers without a weight_version field
// (vLLM) report the served weights.
const weightVersionHeader = "X-Weight-Version"

// baseTurn returns a turn with the message, finish and usage of a choice.
func baseTurn(resp *ChatResponse, ch *ChatChoice, h http.Header) *Turn {
	t := &Turn{
		Message:      ch.Message.message(),
		FinishReason: string(ch.FinishReason),
		StopReason:   rawStopReason(ch.StopReason),
		Usage:        resp.Usage,
	}
	if t.StopReason == "" {
		t.StopReason = rawStopReason(ch.MatchedStop)
	}
	if resp.Metadata != nil {
		t.WeightVersion = resp.Metadata.WeightVersion
	}
	if ch.MetaInfo != nil && ch.MetaInfo.WeightVersion != "" {
		t.WeightVersion = ch.MetaInfo.WeightVersion
	}
	if t.WeightVersion == "" && h != nil {
		t.WeightVersion = h.Get(weightVersionHeader)
	}
	finishTurn(t)
	return t
}

// checkTokens validates a turn's token data: ids present and one logprob
// per completion id.
func checkTokens(t *Turn) error {
	if len(t.PromptIDs) == 0 || len(t.CompletionIDs) == 0 {
		return &DecodeError{Err: fmt.Errorf("%w: %d prompt ids, %d completion ids", ErrMissingTokenIDs, len(t.PromptIDs), len(t.CompletionIDs))}
	}
	if len(t.Logprobs) != len(t.CompletionIDs) {
		return &DecodeError{Err: fmt.Errorf("%w: %d logprobs for %d completion ids", ErrLogprobMismatch, len(t.Logprobs), len(t.CompletionIDs))}
	}
	return nil
}
