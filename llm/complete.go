package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// CompletionRequest is one raw completion: a prompt the caller rendered
// itself (its own chat template, or none), sent to the engine as it is.
type CompletionRequest struct {
	// Prompt is the prompt as text; the engine tokenizes it with its own
	// tokenizer and applies no chat template.
	Prompt string
	// PromptIDs, when set, is the prompt as token ids, which the engine
	// generates from unchanged; Prompt is then ignored.
	PromptIDs []int32
	// TrajectoryKey routes the calls of one trajectory to one endpoint, as
	// for Request.
	TrajectoryKey string
	// Sampling overrides the role's sampling parameters field by field.
	Sampling *Sampling
}

// Complete performs one raw completion. It takes Chat's path (routing,
// retries, timeouts, the in-flight slot, aborted attempts kept as a
// partial Turn, token capture, metrics) with the dialect's completion
// route: vLLM's /v1/completions with return_token_ids (vLLM ≥ 0.10.2:
// choices[].prompt_token_ids and token_ids, the sampled logprobs from
// logprobs 0), SGLang's /generate from input_ids (a text prompt is first
// tokenized by the same server's /v1/tokenize, on the endpoint that then
// generates), the openai dialect's /v1/completions without tokens. The
// Turn's message holds the completion text as the engine decoded it; no
// reasoning or tool calls are parsed from it, the text is the caller's to
// read. With Config.Stream the vLLM and openai dialects stream the
// completion (so the idle timeout ends a stalled one) and SGLang streams
// /generate. It is safe for concurrent use.
func (c *Client) Complete(ctx context.Context, req CompletionRequest) (*Turn, error) {
	if len(req.PromptIDs) == 0 && req.Prompt == "" {
		return nil, fmt.Errorf("llm role %s: complete: empty prompt", c.role)
	}
	return c.call(ctx, req.Sampling, func(ctx context.Context, s Sampling) (*Turn, *endpoint, int, error) {
		return c.dialect.complete(ctx, c, req, s)
	})
}

// CompletionBody is a /v1/completions request of vLLM or an OpenAI
// server. Prompt is a string or a list of token ids.
type CompletionBody struct {
	Model             string   `json:"model"`
	Prompt            any      `json:"prompt"`
	MaxTokens         int      `json:"max_tokens,omitempty"`
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	PresencePenalty   *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty,omitempty"`
	Seed              *int64   `json:"seed,omitempty"`
	Stop              []string `json:"stop,omitempty"`
	// Logprobs is the number of alternatives per token; 0 asks for the
	// sampled token's logprob alone.
	Logprobs *int `json:"logprobs,omitempty"`
	// ReturnTokenIDs is vLLM ≥ 0.10.2's switch for
	// choices[].prompt_token_ids and choices[].token_ids.
	ReturnTokenIDs bool `json:"return_token_ids,omitempty"`
	// Stream asks for the completion as server-sent events, with the
	// usage event StreamOptions asks for.
	Stream        bool                  `json:"stream,omitempty"`
	StreamOptions *openai.StreamOptions `json:"stream_options,omitempty"`
}

// CompletionResponse is a /v1/completions answer with vLLM's token fields.
type CompletionResponse struct {
	ID       string             `json:"id"`
	Choices  []CompletionChoice `json:"choices"`
	Usage    openai.Usage       `json:"usage"`
	Metadata *ResponseMetadata  `json:"metadata"`
}

// CompletionChoice is one completion choice.
type CompletionChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	FinishReason string          `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"`
	MatchedStop  json.RawMessage `json:"matched_stop"`
	// TokenIDs and PromptTokenIDs are vLLM's (return_token_ids).
	TokenIDs       IDList `json:"token_ids"`
	PromptTokenIDs IDList `json:"prompt_token_ids"`
	Logprobs       *struct {
		// TokenLogprobs holds the sampled tokens' logprobs; a null entry
		// (a prompt position under echo) is refused.
		TokenLogprobs []*float64 `json:"token_logprobs"`
	} `json:"logprobs"`
}

// completionBody is the /v1/completions body of req with sampling s;
// capture asks for the token ids and the sampled logprobs.
func (c *Client) completionBody(req CompletionRequest, s Sampling, capture bool) ([]byte, error) {
	b := CompletionBody{Model: c.model, Prompt: req.Prompt, MaxTokens: s.MaxTokens, Stream: c.stream.Load(),
		Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP, RepetitionPenalty: s.RepetitionPenalty,
		PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty, Seed: s.Seed, Stop: s.Stop}
	if len(req.PromptIDs) > 0 {
		b.Prompt = req.PromptIDs
	}
	if b.Stream {
		b.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if capture {
		zero := 0
		b.Logprobs, b.ReturnTokenIDs = &zero, true
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("llm role %s: encode completion request: %w", c.role, err)
	}
	return body, nil
}

// decodeCompletion reads a /v1/completions answer into a turn. A
// generation the server aborted returns its partial turn (nil when it
// holds no usable tokens) with a *DecodeError wrapping ErrAborted. A turn
// without any token data is returned as it is: Complete refuses it when
// the role captures tokens.
func decodeCompletion(body []byte, h http.Header) (*Turn, error) {
	var resp CompletionResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, &DecodeError{Err: fmt.Errorf("%w: %v", ErrMalformedResponse, err), Snippet: snippet(body)}
	}
	return completionTurn(&resp, body, h)
}

// completionTurn is decodeCompletion's turn of a decoded answer (body is
// quoted in errors).
func completionTurn(resp *CompletionResponse, body []byte, h http.Header) (*Turn, error) {
	if len(resp.Choices) == 0 {
		return nil, &DecodeError{Err: fmt.Errorf("%w: no choices", ErrMalformedResponse), Snippet: snippet(body)}
	}
	ch := resp.Choices[0]
	if ch.FinishReason == "" {
		return nil, &DecodeError{Err: fmt.Errorf("%w: choice has no finish_reason", ErrMalformedResponse), Snippet: snippet(body)}
	}
	t := &Turn{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: ch.Text},
		FinishReason: ch.FinishReason, StopReason: rawStopReason(ch.StopReason), Usage: resp.Usage,
		PromptIDs: ch.PromptTokenIDs, CompletionIDs: ch.TokenIDs}
	if t.StopReason == "" {
		t.StopReason = rawStopReason(ch.MatchedStop)
	}
	if resp.Metadata != nil {
		t.WeightVersion = resp.Metadata.WeightVersion
	}
	if t.WeightVersion == "" && h != nil {
		t.WeightVersion = h.Get(weightVersionHeader)
	}
	if ch.Logprobs != nil {
		t.Logprobs = make([]float64, len(ch.Logprobs.TokenLogprobs))
		for i, lp := range ch.Logprobs.TokenLogprobs {
			if lp == nil {
				return nil, &DecodeError{Err: fmt.Errorf("%w: token_logprobs[%d] is null", ErrLogprobMismatch, i), Snippet: snippet(body)}
			}
			t.Logprobs[i] = *lp
		}
	}
	if ch.FinishReason == "abort" {
		return partialTurn(t, ""), abortError("")
	}
	if len(t.PromptIDs) == 0 && len(t.CompletionIDs) == 0 {
		return t, nil
	}
	if err := checkTokens(t); err != nil {
		return nil, err
	}
	return t, nil
}

// completeRoute performs req on path /v1/completions: the exchange of the
// vLLM and openai dialects.
func (c *Client) completeRoute(ctx context.Context, req CompletionRequest, s Sampling, capture bool) (*Turn, *endpoint, int, error) {
	body, err := c.completionBody(req, s, capture)
	if err != nil {
		return nil, nil, 0, err
	}
	var turn, aborted *Turn
	judge := func(t *Turn, err error) error {
		if errors.Is(err, ErrAborted) && t != nil {
			aborted = t
		}
		turn = t
		return err
	}
	var (
		e *endpoint
		n int
	)
	if c.stream.Load() {
		decode := func(b []byte, h http.Header) error {
			resp, err := decodeCompletionStream(b)
			if err != nil {
				if isStreamEnded(err) && resp != nil {
					if t, _ := completionTurn(resp, b, h); t != nil {
						aborted = cutTurn(t, ErrStreamEnded.Error())
					}
				}
				return err
			}
			return judge(completionTurn(resp, b, h))
		}
		cut := func(b []byte, h http.Header, reason string) {
			resp, _ := decodeCompletionStream(b)
			if resp == nil {
				return
			}
			if t, _ := completionTurn(resp, b, h); t != nil {
				if p := cutTurn(t, reason); p != nil {
					aborted = p
				}
			}
		}
		e, n, err = c.postStream(ctx, req.TrajectoryKey, nil, "/v1/completions", body, decode, cut)
	} else {
		decode := func(b []byte, h http.Header) error { return judge(decodeCompletion(b, h)) }
		e, n, err = c.post(ctx, req.TrajectoryKey, nil, "/v1/completions", body, decode)
	}
	if err != nil {
		return aborted, e, n, err
	}
	return turn, e, n, nil
}

func (d *vllmDialect) complete(ctx context.Context, c *Client, req CompletionRequest, s Sampling) (*Turn, *endpoint, int, error) {
	return c.completeRoute(ctx, req, s, true)
}

func (openaiDialect) complete(ctx context.Context, c *Client, req CompletionRequest, s Sampling) (*Turn, *endpoint, int, error) {
	// Hosted APIs reject top_k, min_p and repetition_penalty, as for chat.
	s.TopK, s.MinP, s.RepetitionPenalty = nil, nil, nil
	return c.completeRoute(ctx, req, s, false)
}

// tokenizePrompt asks the server for the ids of a text prompt as its
// tokenizer makes them (no chat template), pinned to e while it is in
// rotation.
func (c *Client) tokenizePrompt(ctx context.Context, key, prompt string, e *endpoint, path string) ([]int32, *endpoint, int, error) {
	body, err := json.Marshal(struct {
		Model  string `json:"model,omitempty"`
		Prompt string `json:"prompt"`
	}{c.model, prompt})
	if err != nil {
		return nil, e, 0, fmt.Errorf("llm role %s: encode tokenize request: %w", c.role, err)
	}
	return c.tokenizeBody(ctx, key, body, e, path)
}

// complete generates on SGLang's native /generate from input_ids: the
// caller's ids, or those the server's /v1/tokenize gives a text prompt
// (the generation is pinned to the endpoint that tokenized it), so the
// prompt ids of the turn are exactly the ones the engine ran. The
// completion ids and logprobs are output_ids and
// meta_info.output_token_logprobs.
func (d *sglangDialect) complete(ctx context.Context, c *Client, req CompletionRequest, s Sampling) (*Turn, *endpoint, int, error) {
	ids := req.PromptIDs
	var (
		te *endpoint
		tn int
	)
	if len(ids) == 0 {
		var err error
		ids, te, tn, err = c.tokenizePrompt(ctx, req.TrajectoryKey, req.Prompt, nil, "/v1/tokenize")
		if err != nil {
			return nil, te, tn, err
		}
	}
	raw := func(text string) *Turn {
		return &Turn{Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: text}}
	}
	return c.generateIDs(ctx, req.TrajectoryKey, te, tn, ids, s, c.stream.Load(), raw)
}
