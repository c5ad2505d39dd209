package llm

import (
	"net/http"
)

// samplingParamsOf is what vLLM's to_sampling_params makes of a request's
// sampling fields, every field set: the server's defaults where the
// request is silent (the sim has no generation config to take them from).
func samplingParamsOf(f *samplingFields, n, maxTokens int, logprobs *int) *vllmSamplingParams {
	zero, one := 0.0, 1.0
	orF := func(p *float64, def float64) *float64 {
		if p != nil {
			return p
		}
		return &def
	}
	topK := 0
	if f.TopK != nil {
		topK = *f.TopK
	}
	skip := f.SkipSpecialTokens == nil || *f.SkipSpecialTokens
	stop := f.Stop
	if stop == nil {
		stop = stopList{}
	}
	stopIDs := f.StopTokenIDs
	if stopIDs == nil {
		stopIDs = []int{}
	}
	return &vllmSamplingParams{
		N: &n, PresencePenalty: orF(f.PresencePenalty, zero), FrequencyPenalty: orF(f.FrequencyPenalty, zero),
		RepetitionPenalty: orF(f.RepetitionPenalty, one), Temperature: orF(f.Temperature, one), TopP: orF(f.TopP, one),
		TopK: &topK, MinP: orF(f.MinP, zero), Seed: f.Seed, Stop: stop, StopTokenIDs: stopIDs, IgnoreEOS: f.IgnoreEOS,
		MaxTokens: &maxTokens, MinTokens: f.MinTokens, Logprobs: logprobs, SkipSpecialTokens: &skip,
	}
}

// handleChatRender serves vLLM's POST /v1/chat/completions/render: the
// chat request rendered with the chat template and tokenized, returned as
// the GenerateRequest /inference/v1/generate takes. Nothing is generated.
func (s *Server) handleChatRender(w http.ResponseWriter, r *http.Request) {
	job, err := s.prepareChat(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	defer s.pc.release(job.gen.promptIDs)
	var logprobs *int
	if job.req.Logprobs {
		top := job.gen.topLogprobs
		logprobs = &top
	}
	resp := tokensGenerateRequest{
		RequestID: "chatcmpl-" + job.id, TokenIDs: job.gen.promptIDs, Model: modelOrNull(job.req.Model), Stream: job.req.Stream,
		SamplingParams: samplingParamsOf(&job.req.samplingFields, job.gen.n, job.gen.maxTokens, logprobs),
	}
	if job.req.Stream {
		resp.StreamOptions = job.req.StreamOptions
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleCompletionsRender serves vLLM's POST /v1/completions/render: one
// GenerateRequest per prompt of a completions request.
func (s *Server) handleCompletionsRender(w http.ResponseWriter, r *http.Request) {
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
	if req.Logprobs != nil {
		if *req.Logprobs < 0 {
			s.writeError(w, badRequest("`logprobs` must be a positive value."))
			return
		}
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
		def := 16 // the completions default
		requested = &def
	}
	out := make([]tokensGenerateRequest, 0, len(prompts))
	for _, p := range prompts {
		if p.isIDs && s.cfg.Disabled.TokenPrompt {
			s.writeError(w, errTokenPrompt)
			return
		}
		ids := p.ids
		if p.isIDs {
			if err := s.checkIDs(ids); err != nil {
				s.writeError(w, err)
				return
			}
		} else {
			ids = s.tok.Encode(p.text)
		}
		maxTokens, err := s.budget(len(ids), requested)
		if err != nil {
			s.writeError(w, err)
			return
		}
		g := tokensGenerateRequest{
			RequestID: "cmpl-" + s.responseID(s.nextCounter()), TokenIDs: ids, Model: modelOrNull(req.Model), Stream: req.Stream,
			SamplingParams: samplingParamsOf(&req.samplingFields, n, maxTokens, req.Logprobs),
		}
		if req.Stream {
			g.StreamOptions = req.StreamOptions
		}
		out = append(out, g)
	}
	writeJSON(w, http.StatusOK, out)
}

// errTokenPrompt answers a token-id prompt on a server configured without
// them (Config.Disabled.TokenPrompt).
var errTokenPrompt = badRequest("prompt: token-id prompts are not accepted by this server; send text")

// modelOrNull is a request's model as vLLM echoes it: null when absent.
func modelOrNull(m string) *string {
	if m == "" {
		return nil
	}
	return &m
}
