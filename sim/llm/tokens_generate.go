package llm

import (
	"errors"
	"net/http"
)

// vllmSamplingParams is vLLM's SamplingParams as the tokens-in/tokens-out
// route reads it and the render routes write it. Pointers tell a missing
// field from a zero one on input; render sets every one.
type vllmSamplingParams struct {
	N                 *int     `json:"n"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	Seed              *int64   `json:"seed"`
	Stop              stopList `json:"stop"`
	StopTokenIDs      []int    `json:"stop_token_ids"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	MaxTokens         *int     `json:"max_tokens"`
	MinTokens         int      `json:"min_tokens"`
	// Logprobs is how many top logprobs to return per output token (0:
	// the sampled token's only); nil returns none.
	Logprobs          *int  `json:"logprobs"`
	PromptLogprobs    *int  `json:"prompt_logprobs"`
	SkipSpecialTokens *bool `json:"skip_special_tokens"`
}

// tokensGenerateRequest is vLLM's GenerateRequest, the body of
// /inference/v1/generate and what the render routes return.
type tokensGenerateRequest struct {
	RequestID        string              `json:"request_id"`
	TokenIDs         []int               `json:"token_ids"`
	Features         *any                `json:"features"`
	SamplingParams   *vllmSamplingParams `json:"sampling_params"`
	Model            *string             `json:"model"`
	Stream           bool                `json:"stream"`
	StreamOptions    *streamOptions      `json:"stream_options"`
	CacheSalt        *string             `json:"cache_salt"`
	Priority         int                 `json:"priority"`
	KVTransferParams *any                `json:"kv_transfer_params"`
}

// tokensChoice is GenerateResponseChoice (and its stream variant).
type tokensChoice struct {
	Index        int           `json:"index"`
	Logprobs     *vllmLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	TokenIDs     []int         `json:"token_ids"`
}

// tokensGenerateResponse is GenerateResponse (and a stream chunk).
type tokensGenerateResponse struct {
	RequestID        string         `json:"request_id"`
	ID               string         `json:"id,omitempty"`
	Created          int64          `json:"created,omitempty"`
	Model            string         `json:"model,omitempty"`
	Choices          []tokensChoice `json:"choices"`
	Usage            *vllmUsage     `json:"usage,omitempty"`
	PromptLogprobs   *any           `json:"prompt_logprobs"`
	KVTransferParams *any           `json:"kv_transfer_params"`
}

// tokensStreamChunk is GenerateStreamResponse: one event of a streamed
// tokens route, usage only on the last when asked.
type tokensStreamChunk struct {
	RequestID string         `json:"request_id"`
	Choices   []tokensChoice `json:"choices"`
	Usage     *vllmUsage     `json:"usage,omitempty"`
}

// prepareTokensGenerate decodes and validates a tokens-in request.
func (s *Server) prepareTokensGenerate(r *http.Request) (*tokensGenerateRequest, *genRequest, error) {
	var req tokensGenerateRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, nil, err
	}
	if req.Model != nil {
		if err := s.checkModel(*req.Model); err != nil {
			return nil, nil, err
		}
	}
	if len(req.TokenIDs) == 0 {
		return nil, nil, badRequest("1 validation error: body.token_ids: field required (a non-empty list of token ids)")
	}
	if req.SamplingParams == nil {
		return nil, nil, badRequest("1 validation error: body.sampling_params: field required")
	}
	if req.Features != nil && *req.Features != nil {
		return nil, nil, badRequest("features: multimodal inputs are not supported by the simulator")
	}
	sp := req.SamplingParams
	n := 1
	if sp.N != nil {
		n = *sp.N
	}
	fields := samplingFields{Temperature: sp.Temperature, TopP: sp.TopP, TopK: sp.TopK, MinP: sp.MinP,
		Stream: req.Stream, StreamOptions: req.StreamOptions}
	if err := checkSampling(&fields, n); err != nil {
		return nil, nil, err
	}
	if err := s.checkN(n); err != nil {
		return nil, nil, err
	}
	if sp.Logprobs != nil {
		if *sp.Logprobs < 0 && *sp.Logprobs != -1 {
			return nil, nil, badRequest("logprobs must be non-negative or -1, got %d.", *sp.Logprobs)
		}
		if err := s.checkLogprobs(*sp.Logprobs); err != nil {
			return nil, nil, err
		}
	}
	ids, msgs, tools, err := s.promptOf(promptInput{ids: req.TokenIDs, isIDs: true})
	if err != nil {
		return nil, nil, err
	}
	// The route defaults max_tokens to the rest of the context, as
	// vLLM's does (not SamplingParams' 16).
	maxTokens, err := s.budget(len(ids), sp.MaxTokens)
	if err != nil {
		return nil, nil, err
	}
	g := &genRequest{
		promptIDs: ids, msgs: msgs, tools: tools, n: n, maxTokens: maxTokens,
		temperature: temperatureOr(sp.Temperature), seed: sp.Seed, stop: sp.Stop,
		filters: filtersOf(sp.TopP, sp.TopK, sp.MinP), counter: s.nextCounter(), route: r.URL.Path,
	}
	if sp.Logprobs != nil {
		// vLLM lists at least one entry per position: the sampled token.
		g.logprobs, g.topLogprobs = true, max(*sp.Logprobs, 1)
	}
	if req.RequestID == "" {
		req.RequestID = s.responseID(g.counter)
	}
	return &req, g, nil
}

// handleTokensGenerate serves vLLM's POST /inference/v1/generate: token
// ids in, sampled token ids (stop token included) and logprobs out, no
// text.
func (s *Server) handleTokensGenerate(w http.ResponseWriter, r *http.Request) {
	req, g, err := s.prepareTokensGenerate(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	rid := "generate-tokens-" + req.RequestID
	created := s.cfg.Clock().Unix()
	if req.Stream {
		s.streamTokensGenerate(w, r, req, g, rid, created)
		return
	}
	choices, err := s.run(r.Context(), g)
	if err != nil {
		if errors.Is(err, r.Context().Err()) {
			return
		}
		s.writeError(w, err)
		return
	}
	resp := tokensGenerateResponse{RequestID: rid, ID: rid, Created: created, Model: s.cfg.Model, Choices: make([]tokensChoice, len(choices))}
	completion := 0
	for i, c := range choices {
		ch := tokensChoice{Index: c.index, FinishReason: strp(c.finish), TokenIDs: c.ids}
		if g.logprobs {
			ch.Logprobs = s.tokensLogprobsOf(c.lps)
		}
		resp.Choices[i] = ch
		completion += len(c.ids)
	}
	resp.Usage = &vllmUsage{PromptTokens: len(g.promptIDs), CompletionTokens: completion, TotalTokens: len(g.promptIDs) + completion}
	writeJSON(w, http.StatusOK, resp)
}

// streamTokensGenerate streams one event per output token: its id, its
// logprobs, and the finish reason on the last; then the usage when asked
// and [DONE].
func (s *Server) streamTokensGenerate(w http.ResponseWriter, r *http.Request, req *tokensGenerateRequest, g *genRequest, rid string, created int64) {
	ctx := r.Context()
	t, err := s.eng.admit(ctx, len(g.promptIDs))
	if err != nil {
		return
	}
	defer func() { t.release() }()
	choices, err := s.generate(ctx, g)
	if err != nil {
		if ctx.Err() == nil {
			s.writeError(w, err)
		}
		return
	}
	out := startSSE(w)
	completion := 0
	for _, c := range choices {
		for k, id := range c.ids {
			wait := s.cfg.PerToken
			if k == 0 {
				wait = s.cfg.TTFT
			}
			if err := t.wait(ctx, wait); err != nil {
				return
			}
			ch := tokensChoice{Index: c.index, TokenIDs: []int{id}}
			if k == len(c.ids)-1 {
				ch.FinishReason = strp(c.finish)
			}
			if g.logprobs {
				ch.Logprobs = s.tokensLogprobsOf(c.lps[k : k+1])
			}
			if !out.data(tokensStreamChunk{RequestID: rid, Choices: []tokensChoice{ch}}) {
				return
			}
		}
		completion += len(c.ids)
	}
	s.account(g, choices)
	if o := req.StreamOptions; o != nil && o.IncludeUsage != nil && *o.IncludeUsage {
		u := vllmUsage{PromptTokens: len(g.promptIDs), CompletionTokens: completion, TotalTokens: len(g.promptIDs) + completion}
		out.data(tokensStreamChunk{RequestID: rid, Choices: []tokensChoice{}, Usage: &u})
	}
	out.raw("[DONE]")
}

// tokensLogprobsOf renders logprobs as the tokens route does: every token
// named "token_id:N", bytes null.
func (s *Server) tokensLogprobsOf(lps []tokenLogprob) *vllmLogprobs {
	out := s.vllmLogprobsOf(lps, true)
	for i := range out.Content {
		out.Content[i].Bytes = nil
		for j := range out.Content[i].TopLogprobs {
			out.Content[i].TopLogprobs[j].Bytes = nil
		}
	}
	return out
}
