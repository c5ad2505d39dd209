package llm

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// sglangSamplingParams is /generate's sampling_params.
type sglangSamplingParams struct {
	MaxNewTokens      *int     `json:"max_new_tokens"`
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	Stop              stopList `json:"stop"`
	StopTokenIDs      []int    `json:"stop_token_ids"`
	N                 *int     `json:"n"`
	SamplingSeed      *int64   `json:"sampling_seed"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	SkipSpecialTokens *bool    `json:"skip_special_tokens"`
	NoStopTrim        bool     `json:"no_stop_trim"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	MinNewTokens      *int     `json:"min_new_tokens"`
	JSONSchema        *string  `json:"json_schema"`
	Regex             *string  `json:"regex"`
}

// generateRequest is SGLang's GenerateReqInput (the single-request form).
type generateRequest struct {
	Text                 json.RawMessage       `json:"text"`
	InputIDs             json.RawMessage       `json:"input_ids"`
	SamplingParams       *sglangSamplingParams `json:"sampling_params"`
	ReturnLogprob        bool                  `json:"return_logprob"`
	LogprobStartLen      *int                  `json:"logprob_start_len"`
	TopLogprobsNum       int                   `json:"top_logprobs_num"`
	ReturnTextInLogprobs bool                  `json:"return_text_in_logprobs"`
	Stream               bool                  `json:"stream"`
	Rid                  *string               `json:"rid"`
	Model                string                `json:"model"`
	LoraPath             json.RawMessage       `json:"lora_path"`
	CustomLogitProcessor *string               `json:"custom_logit_processor"`
	ReturnHiddenStates   bool                  `json:"return_hidden_states"`
}

// sglangMeta is the meta_info of a /generate result (and of a chat choice
// with return_meta_info), fields in SGLang's order.
type sglangMeta struct {
	ID                  string      `json:"id"`
	FinishReason        any         `json:"finish_reason"`
	PromptTokens        int         `json:"prompt_tokens"`
	WeightVersion       string      `json:"weight_version"`
	TotalRetractions    int         `json:"total_retractions"`
	InputTokenLogprobs  *[][3]any   `json:"input_token_logprobs,omitempty"`
	OutputTokenLogprobs *[][3]any   `json:"output_token_logprobs,omitempty"`
	InputTopLogprobs    *[]any      `json:"input_top_logprobs,omitempty"`
	OutputTopLogprobs   *[][][3]any `json:"output_top_logprobs,omitempty"`
	CompletionTokens    int         `json:"completion_tokens"`
	CachedTokens        int         `json:"cached_tokens"`
	E2ELatency          float64     `json:"e2e_latency"`
}

// sglangFinishReason is meta_info.finish_reason, fields in SGLang's order.
type sglangFinishReason struct {
	Type    string `json:"type"`
	Matched any    `json:"matched,omitempty"`
	Length  int    `json:"length,omitempty"`
	Message string `json:"message,omitempty"`
}

// sglangFinish is meta_info.finish_reason of a finished sequence.
func (s *Server) sglangFinish(c genChoice) any {
	switch {
	case c.finish == "abort":
		return sglangFinishReason{Type: "abort", Message: "Aborted"}
	case c.finish == "length":
		return sglangFinishReason{Type: "length", Length: len(c.ids)}
	case c.stopStr != "":
		return sglangFinishReason{Type: "stop", Matched: c.stopStr}
	default:
		return sglangFinishReason{Type: "stop", Matched: s.tok.SpecialID(IMEnd)}
	}
}

// sglangMetaOf builds meta_info for one sequence. withText puts each token's
// text in the third slot of the logprob triples (return_text_in_logprobs),
// which SGLang's OpenAI routes always ask for.
func (s *Server) sglangMetaOf(rid string, g *genRequest, c genChoice, version string, logprobs, withText bool) *sglangMeta {
	m := &sglangMeta{
		ID: rid, FinishReason: s.sglangFinish(c), PromptTokens: len(g.promptIDs), WeightVersion: version,
		CompletionTokens: len(c.ids), E2ELatency: s.latency(len(c.ids)).Seconds(),
	}
	if !logprobs {
		return m
	}
	text := func(id int) any {
		if !withText {
			return nil
		}
		p, _, _ := s.tok.Token(id)
		return p
	}
	// logprob_start_len -1 starts at the last prompt token, whose logprob is
	// not computed.
	last := g.promptIDs[len(g.promptIDs)-1]
	in := [][3]any{{nil, last, text(last)}}
	m.InputTokenLogprobs = &in
	out := make([][3]any, len(c.lps))
	for i, lp := range c.lps {
		out[i] = [3]any{lp.logprob, lp.id, text(lp.id)}
	}
	m.OutputTokenLogprobs = &out
	if g.topLogprobs > 0 {
		inTop := []any{nil}
		m.InputTopLogprobs = &inTop
		tops := make([][][3]any, len(c.lps))
		for i, lp := range c.lps {
			for _, alt := range lp.top {
				tops[i] = append(tops[i], [3]any{alt.logprob, alt.id, text(alt.id)})
			}
		}
		m.OutputTopLogprobs = &tops
	}
	return m
}

// generateResult is one /generate result.
type generateResult struct {
	Text      string      `json:"text"`
	OutputIDs []int       `json:"output_ids"`
	MetaInfo  *sglangMeta `json:"meta_info"`
}

// prepareGenerate decodes and validates a /generate request.
func (s *Server) prepareGenerate(r *http.Request) (*generateRequest, *genRequest, error) {
	var req generateRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, nil, err
	}
	hasText := len(req.Text) > 0 && string(req.Text) != "null"
	hasIDs := len(req.InputIDs) > 0 && string(req.InputIDs) != "null"
	if hasText == hasIDs {
		return nil, nil, badRequest("Either text, input_ids or input_embeds should be provided.")
	}
	var prompts []promptInput
	var err error
	if hasText {
		prompts, err = parsePrompts(req.Text, "text")
	} else {
		prompts, err = parsePrompts(req.InputIDs, "input_ids")
	}
	if err != nil {
		return nil, nil, err
	}
	if hasIDs && s.cfg.Disabled.TokenPrompt {
		return nil, nil, badRequest("input_ids: token-id prompts are not accepted by this server; send text")
	}
	if len(prompts) != 1 {
		return nil, nil, badRequest("batched /generate requests are not supported by the simulator; send one prompt per request")
	}
	sp := req.SamplingParams
	if sp == nil {
		sp = &sglangSamplingParams{}
	}
	n := 1
	if sp.N != nil {
		n = *sp.N
	}
	fields := samplingFields{Temperature: sp.Temperature, TopP: sp.TopP, TopK: sp.TopK, MinP: sp.MinP}
	if err := checkSampling(&fields, n); err != nil {
		return nil, nil, err
	}
	if err := s.checkN(n); err != nil {
		return nil, nil, err
	}
	if req.ReturnLogprob {
		if err := s.checkLogprobs(req.TopLogprobsNum); err != nil {
			return nil, nil, err
		}
	}
	ids, msgs, tools, err := s.promptOf(prompts[0])
	if err != nil {
		return nil, nil, err
	}
	requested := sp.MaxNewTokens
	if requested == nil {
		def := 128 // SGLang's default max_new_tokens
		requested = &def
	}
	maxTokens, err := s.budget(len(ids), requested)
	if err != nil {
		return nil, nil, err
	}
	g := &genRequest{
		promptIDs: ids, msgs: msgs, tools: tools, n: n, maxTokens: maxTokens,
		temperature: temperatureOr(sp.Temperature), seed: sp.SamplingSeed, stop: sp.Stop,
		filters:  filtersOf(sp.TopP, sp.TopK, sp.MinP),
		logprobs: req.ReturnLogprob, topLogprobs: req.TopLogprobsNum, counter: s.nextCounter(), route: r.URL.Path,
	}
	return &req, g, nil
}

// promptOf turns a raw prompt (text or ids) into prompt ids and, by parsing
// the ChatML it holds, the conversation the policy reads.
func (s *Server) promptOf(p promptInput) ([]int, []Message, []policy.Tool, error) {
	ids, text := p.ids, p.text
	if p.isIDs {
		if err := s.checkIDs(ids); err != nil {
			return nil, nil, nil, err
		}
		t, err := s.tok.Decode(ids)
		if err != nil {
			return nil, nil, nil, badRequest("%v", err)
		}
		text = t
	} else {
		ids = s.tok.Encode(text)
	}
	msgs, tools, err := ParsePrompt(text)
	if err != nil {
		return nil, nil, nil, badRequest("prompt: %v", err)
	}
	return ids, msgs, tools, nil
}

// handleGenerate serves SGLang's POST /generate.
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	req, g, err := s.prepareGenerate(r)
	if err != nil {
		writeNativeError(w, err)
		return
	}
	rid := s.responseID(g.counter)
	if req.Rid != nil && *req.Rid != "" {
		rid = *req.Rid
	}
	if req.Stream {
		s.streamGenerate(w, r, req, g, rid)
		return
	}
	choices, err := s.run(r.Context(), g)
	if err != nil {
		if errors.Is(err, r.Context().Err()) {
			return
		}
		writeNativeError(w, err)
		return
	}
	version := s.servedVersion(r.Context())
	results := make([]generateResult, len(choices))
	for i, c := range choices {
		id := rid
		if len(choices) > 1 {
			id = rid + "-" + strconv.Itoa(i)
		}
		results[i] = generateResult{Text: c.text, OutputIDs: c.ids, MetaInfo: s.sglangMetaOf(id, g, c, version, g.logprobs, req.ReturnTextInLogprobs)}
	}
	if len(results) == 1 {
		writeJSON(w, http.StatusOK, results[0])
		return
	}
	writeJSON(w, http.StatusOK, results)
}

// streamGenerate streams /generate: one event per output token holding the
// cumulative text and output ids, meta_info.finish_reason null until the
// last, then "data: [DONE]".
func (s *Server) streamGenerate(w http.ResponseWriter, r *http.Request, req *generateRequest, g *genRequest, rid string) {
	ctx := r.Context()
	t, err := s.eng.admit(ctx, len(g.promptIDs))
	if err != nil {
		return
	}
	defer t.release()
	choices, err := s.generate(ctx, g)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		writeNativeError(w, err)
		return
	}
	version := s.servedVersion(ctx)
	out := startSSE(w)
	for i, c := range choices {
		id := rid
		if len(choices) > 1 {
			id = rid + "-" + strconv.Itoa(i)
		}
		for k := range c.ids {
			wait := s.cfg.PerToken
			if k == 0 {
				wait = s.cfg.TTFT
			}
			if err := t.wait(ctx, wait); err != nil {
				if ctx.Err() != nil {
					return
				}
				ab, _ := s.abortedChoice(c, k)
				out.data(generateResult{Text: ab.text, OutputIDs: ab.ids, MetaInfo: s.sglangMetaOf(id, g, ab, version, false, false)})
				out.raw("[DONE]")
				return
			}
			part := c
			part.ids = c.ids[:k+1]
			if c.lps != nil {
				part.lps = c.lps[:k+1]
			}
			last := k == len(c.ids)-1
			if !last {
				txt, _ := s.tok.DecodeSkipSpecial(part.ids)
				part.text = validPrefix(txt)
			}
			meta := s.sglangMetaOf(id, g, part, version, g.logprobs, req.ReturnTextInLogprobs)
			if !last {
				meta.FinishReason = nil
			}
			if !out.data(generateResult{Text: part.text, OutputIDs: part.ids, MetaInfo: meta}) {
				return
			}
		}
	}
	s.account(g, choices)
	out.raw("[DONE]")
}
