package llm

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// completionChunk is one event of vLLM's streamed /v1/completions: the
// choice's new text, token ids and logprobs (prompt_token_ids in the
// first event of a choice), its finish reason on the last, a usage event
// without choices when stream_options.include_usage is set, or an error.
type completionChunk struct {
	Object   string             `json:"object"`
	Message  string             `json:"message"`
	Error    json.RawMessage    `json:"error"`
	Choices  []CompletionChoice `json:"choices"`
	Usage    *openai.Usage      `json:"usage"`
	Metadata *ResponseMetadata  `json:"metadata"`
}

// decodeCompletionStream assembles vLLM's streamed /v1/completions into
// the answer the unstreamed route gives: choice 0's whole text, its
// prompt ids, every completion id and sampled logprob in order, and its
// finish and stop reasons. A stream that ends before its [DONE] event
// returns what it carried, marked finish_reason "abort", with
// ErrStreamEnded, for a partial turn; an event that is not JSON of that
// shape or an error event is a *DecodeError wrapping
// ErrMalformedResponse. It never panics.
func decodeCompletionStream(body []byte) (*CompletionResponse, error) {
	var (
		resp CompletionResponse
		ch   CompletionChoice
		text []byte
		lps  []*float64
		seen bool
	)
	done, err := sseEvents(body, func(data []byte) error {
		var ev completionChunk
		if err := json.Unmarshal(data, &ev); err != nil {
			return streamError(body, "%w: event %.80q: %v", ErrMalformedResponse, data, err)
		}
		if msg, ok := (&vllmChunk{Object: ev.Object, Message: ev.Message, Error: ev.Error}).errorMessage(); ok {
			return streamError(body, "%w: error event: %s", ErrMalformedResponse, msg)
		}
		if ev.Usage != nil {
			resp.Usage = *ev.Usage
		}
		if ev.Metadata != nil {
			resp.Metadata = ev.Metadata
		}
		for _, c := range ev.Choices {
			if c.Index != 0 {
				continue
			}
			seen = true
			text = append(text, c.Text...)
			ch.TokenIDs = append(ch.TokenIDs, c.TokenIDs...)
			if len(c.PromptTokenIDs) > 0 {
				ch.PromptTokenIDs = c.PromptTokenIDs
			}
			if c.Logprobs != nil {
				lps = append(lps, c.Logprobs.TokenLogprobs...)
			}
			if c.FinishReason != "" {
				ch.FinishReason = c.FinishReason
			}
			if len(c.StopReason) > 0 && string(c.StopReason) != "null" {
				ch.StopReason = c.StopReason
			}
			if len(c.MatchedStop) > 0 && string(c.MatchedStop) != "null" {
				ch.MatchedStop = c.MatchedStop
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seen {
		return nil, streamError(body, "%w: no event", ErrStreamEnded)
	}
	ch.Text = string(text)
	if lps != nil {
		ch.Logprobs = &struct {
			TokenLogprobs []*float64 `json:"token_logprobs"`
		}{lps}
	}
	if resp.Usage.TotalTokens == 0 {
		resp.Usage.PromptTokens, resp.Usage.CompletionTokens = len(ch.PromptTokenIDs), len(ch.TokenIDs)
		resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	}
	if !done || ch.FinishReason == "" {
		ch.FinishReason = "abort"
		resp.Choices = []CompletionChoice{ch}
		return &resp, streamError(body, "%w: no [DONE] event", ErrStreamEnded)
	}
	resp.Choices = []CompletionChoice{ch}
	return &resp, nil
}
