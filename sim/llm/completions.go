package llm

import (
	"errors"
	"net/http"
)

// completionLogprobs is the legacy completions logprobs object.
type completionLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// completionChoice is CompletionResponseChoice; vLLM names the stop match
// stop_reason, SGLang matched_stop, so both are optional here.
type completionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     *any                `json:"stop_reason,omitempty"`
	MatchedStop    *any                `json:"matched_stop,omitempty"`
	TokenIDs       []int               `json:"token_ids,omitempty"`
	PromptLogprobs *any                `json:"prompt_logprobs,omitempty"`
	PromptTokenIDs []int               `json:"prompt_token_ids,omitempty"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   any                `json:"usage"`
}

// completionLogprobsOf renders logprobs in the completions shape: top_logprobs
// maps token text to logprob, text_offset counts bytes from the start of the
// completion text.
func (s *Server) completionLogprobsOf(c genChoice, asIDs bool) *completionLogprobs {
	out := &completionLogprobs{TextOffset: []int{}, TokenLogprobs: []float64{}, Tokens: []string{}, TopLogprobs: []map[string]float64{}}
	offset := 0
	for _, lp := range c.lps {
		tok, _ := s.tokenString(lp.id, asIDs)
		out.TextOffset = append(out.TextOffset, offset)
		out.TokenLogprobs = append(out.TokenLogprobs, lp.logprob)
		out.Tokens = append(out.Tokens, tok)
		top := map[string]float64{}
		for _, alt := range lp.top {
			at, _ := s.tokenString(alt.id, asIDs)
			if _, dup := top[at]; !dup {
				top[at] = alt.logprob
			}
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		if !s.tok.IsSpecial(lp.id) {
			_, raw, _ := s.tok.Token(lp.id)
			offset += len(raw)
		}
	}
	return out
}

// handleCompletions serves POST /v1/completions in both dialects.
func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := s.decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.writeError(w, err)
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if err := checkSampling(&req.samplingFields, n); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.checkN(n); err != nil {
		s.writeError(w, err)
		return
	}
	if req.Logprobs != nil && *req.Logprobs < 0 {
		s.writeError(w, badRequest("`logprobs` must be a positive value."))
		return
	}
	if req.Logprobs != nil {
		if err := s.checkLogprobs(*req.Logprobs); err != nil {
			s.writeError(w, err)
			return
		}
	}
	prompts, err := parsePrompts(req.Prompt, "prompt")
	if err != nil {
		s.writeError(w, err)
		return
	}
	requested := req.MaxTokens
	if requested == nil {
		def := 16 // the OpenAI and vLLM default for completions
		requested = &def
	}
	jobs := make([]*genRequest, len(prompts))
	for i, p := range prompts {
		if p.isIDs && s.cfg.Disabled.TokenPrompt {
			s.writeError(w, errTokenPrompt)
			return
		}
		ids, msgs, tools, err := s.promptOf(p)
		if err != nil {
			s.writeError(w, err)
			return
		}
		maxTokens, err := s.budget(len(ids), requested)
		if err != nil {
			s.writeError(w, err)
			return
		}
		g := &genRequest{promptIDs: ids, msgs: msgs, tools: tools, n: n, maxTokens: maxTokens,
			temperature: temperatureOr(req.Temperature), seed: req.Seed, stop: req.Stop, counter: s.nextCounter(), route: r.URL.Path,
			filters: filtersOf(req.TopP, req.TopK, req.MinP)}
		if req.Logprobs != nil {
			g.logprobs, g.topLogprobs = true, *req.Logprobs
		}
		jobs[i] = g
	}
	id := s.responseID(jobs[0].counter)
	if s.cfg.Dialect == DialectVLLM {
		id = "cmpl-" + id
	}
	created := s.cfg.Clock().Unix()
	if req.Stream {
		s.streamCompletions(w, r, &req, jobs, id, created)
		return
	}
	resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.Model, Choices: []completionChoice{}}
	prompt, completion := 0, 0
	for pi, g := range jobs {
		choices, err := s.run(r.Context(), g)
		if err != nil {
			if errors.Is(err, r.Context().Err()) {
				return
			}
			s.writeError(w, err)
			return
		}
		prompt += len(g.promptIDs)
		for _, c := range choices {
			resp.Choices = append(resp.Choices, s.completionChoiceOf(&req, g, c, pi*n+c.index, true))
			completion += len(c.ids)
		}
	}
	resp.Usage = s.usageOf(prompt, completion)
	writeJSON(w, http.StatusOK, resp)
}

// completionChoiceOf renders one completion choice; final says whether the
// sequence ended (streams send the finish fields on the last chunk only).
func (s *Server) completionChoiceOf(req *completionRequest, g *genRequest, c genChoice, index int, final bool) completionChoice {
	ch := completionChoice{Index: index, Text: c.text}
	if g.logprobs {
		ch.Logprobs = s.completionLogprobsOf(c, req.ReturnTokensAsIDs)
	}
	if final {
		ch.FinishReason = strp(c.finish)
		if s.cfg.Dialect == DialectSGLang {
			m := s.sglangMatchedStop(c)
			ch.MatchedStop = &m
		} else {
			sr := vllmStopReason(c)
			ch.StopReason = &sr
		}
	}
	if req.ReturnTokenIDs {
		ch.TokenIDs = c.ids
		if s.cfg.Dialect == DialectSGLang || final {
			ch.PromptTokenIDs = g.promptIDs
		}
		if s.cfg.Dialect == DialectVLLM {
			var none any
			ch.PromptLogprobs = &none
		}
	}
	return ch
}

// usageOf returns the dialect's usage object.
func (s *Server) usageOf(prompt, completion int) any {
	if s.cfg.Dialect == DialectSGLang {
		return sglangUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	}
	return vllmUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// streamCompletions streams completions: one chunk per output token.
func (s *Server) streamCompletions(w http.ResponseWriter, r *http.Request, req *completionRequest, jobs []*genRequest, id string, created int64) {
	ctx := r.Context()
	var out *sse
	prompt, completion := 0, 0
	for pi, g := range jobs {
		t, err := s.eng.admit(ctx, len(g.promptIDs))
		if err != nil {
			return
		}
		choices, err := s.generate(ctx, g)
		if err != nil {
			t.release()
			if out == nil && ctx.Err() == nil {
				s.writeError(w, err)
			}
			return
		}
		if out == nil {
			out = startSSE(w)
		}
		prompt += len(g.promptIDs)
		for _, c := range choices {
			idx := pi*len(choices) + c.index
			prev := ""
			for k := range c.ids {
				wait := s.cfg.PerToken
				if k == 0 {
					wait = s.cfg.TTFT
				}
				if err := t.wait(ctx, wait); err != nil {
					t.release()
					return
				}
				sub := genChoice{ids: c.ids[k : k+1], finish: c.finish, eos: c.eos, stopStr: c.stopStr}
				full, _ := s.tok.DecodeSkipSpecial(c.ids[:k+1])
				if k == len(c.ids)-1 {
					full = c.text
				}
				// Hold back an incomplete UTF-8 tail until it completes.
				text := validPrefix(full)
				sub.text = text[min(len(prev), len(text)):]
				prev = text
				if c.lps != nil {
					sub.lps = c.lps[k : k+1]
				}
				ch := s.completionChoiceOf(req, g, sub, idx, k == len(c.ids)-1)
				if !req.ReturnTokenIDs {
					ch.TokenIDs = nil
				}
				if k == 0 && req.ReturnTokenIDs {
					ch.PromptTokenIDs = g.promptIDs
				} else if s.cfg.Dialect == DialectVLLM {
					ch.PromptTokenIDs = nil
				}
				if !out.data(completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.Model, Choices: []completionChoice{ch}, Usage: nil}) {
					t.release()
					return
				}
			}
			completion += len(c.ids)
		}
		s.account(g, choices)
		t.release()
	}
	if o := req.StreamOptions; o != nil && o.IncludeUsage != nil && *o.IncludeUsage {
		out.data(completionResponse{ID: id, Object: "text_completion", Created: created, Model: s.cfg.Model, Choices: []completionChoice{}, Usage: s.usageOf(prompt, completion)})
	}
	out.raw("[DONE]")
}

// validPrefix returns s without a trailing incomplete UTF-8 sequence.
func validPrefix(s string) string {
	for i := len(s); i > 0 && i > len(s)-4; i-- {
		if isValidUTF8(s[:i]) {
			return s[:i]
		}
	}
	if isValidUTF8(s) {
		return s
	}
	return s
}
