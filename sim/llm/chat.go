package llm

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// chatJob is a decoded, validated chat request ready to generate.
type chatJob struct {
	req       *chatRequest
	gen       *genRequest
	toolParse bool // apply the tool-call parser to this request's output
	id        string
	created   int64
}

// parsedChoice is a chat choice split into the OpenAI message fields.
type parsedChoice struct {
	genChoice
	reasoning string
	content   string
	calls     []policy.ToolCall
}

// checkModel answers 404 for a model the vLLM dialect does not serve;
// SGLang serves whatever name the client sends.
func (s *Server) checkModel(model string) error {
	if s.cfg.Dialect == DialectVLLM && model != "" && model != s.cfg.Model {
		return &apiError{status: http.StatusNotFound, errType: "NotFoundError", message: fmt.Sprintf("The model `%s` does not exist.", model)}
	}
	return nil
}

// budget checks the prompt against the context limit and returns the token
// cap: the requested one, or what is left of the context.
func (s *Server) budget(promptLen int, requested *int) (int, error) {
	limit := s.cfg.MaxModelLen
	sg := s.cfg.Dialect == DialectSGLang
	if promptLen >= limit {
		if sg {
			return 0, badRequest("The input (%d tokens) is longer than the model's context length (%d tokens).", promptLen, limit)
		}
		return 0, badRequest("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", limit, promptLen)
	}
	if requested == nil {
		return limit - promptLen, nil
	}
	n := *requested
	if n < 1 {
		if sg {
			return 0, badRequest("max_new_tokens must be at least 1, got %d.", n)
		}
		return 0, badRequest("max_tokens must be at least 1, got %d.", n)
	}
	if promptLen+n > limit {
		if sg {
			return 0, badRequest("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", limit, promptLen+n, promptLen, n)
		}
		return 0, badRequest("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).", n, limit, promptLen, n, limit, promptLen)
	}
	return n, nil
}

// checkIDs rejects token ids outside the vocabulary.
func (s *Server) checkIDs(ids []int) error {
	vocab := s.tok.VocabSize()
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return badRequest("Token id %d is out of vocabulary", id)
		}
	}
	return nil
}

// prepareChat decodes and validates a chat request and renders its prompt.
func (s *Server) prepareChat(r *http.Request) (*chatJob, error) {
	var req chatRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, err
	}
	if err := s.checkModel(req.Model); err != nil {
		return nil, err
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if err := checkSampling(&req.samplingFields, n); err != nil {
		return nil, err
	}
	if err := s.checkN(n); err != nil {
		return nil, err
	}
	top := 0
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
		if top < 0 {
			return nil, badRequest("`top_logprobs` must be a positive value or -1.")
		}
		if top > 0 && !req.Logprobs {
			return nil, badRequest("when using `top_logprobs`, `logprobs` must be set to true.")
		}
		if err := s.checkLogprobs(top); err != nil {
			return nil, err
		}
	}
	if s.cfg.Dialect == DialectSGLang && req.Stream && req.ReturnPromptTokenIDs {
		return nil, badRequest("return_prompt_token_ids is not supported with streaming on /v1/chat/completions. Please set stream=false when using return_prompt_token_ids=true.")
	}
	if len(req.Messages) == 0 {
		if s.cfg.Dialect == DialectSGLang {
			return nil, badRequest("Messages cannot be empty.")
		}
		return nil, badRequest("The decoder prompt cannot be empty")
	}
	msgs, err := toMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	s.inputReasoning(req.Messages, msgs)
	tools, err := toTools(req.Tools)
	if err != nil {
		return nil, err
	}
	toolChoice := string(bytes.Trim(bytes.TrimSpace(req.ToolChoice), `"`))
	if toolChoice != "" && toolChoice != "none" && len(tools) == 0 && toolChoice != "null" {
		return nil, badRequest("When using `tool_choice`, `tools` must be set.")
	}
	noThinking := false
	if v, ok := req.ChatTemplateKwargs["enable_thinking"].(bool); ok && !v {
		noThinking = true
	}
	addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
	prompt, err := s.template(noThinking).Render(msgs, tools, addGen)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	ids := s.pc.Encode(prompt)
	requested := req.MaxCompletionTokens
	if requested == nil {
		requested = req.MaxTokens
	}
	maxTokens, err := s.budget(len(ids), requested)
	if err != nil {
		return nil, err
	}
	counter := s.nextCounter()
	g := &genRequest{
		promptIDs: ids, msgs: msgs, tools: tools, n: n, maxTokens: maxTokens,
		temperature: temperatureOr(req.Temperature), seed: req.Seed, stop: req.Stop,
		filters:  filtersOf(req.TopP, req.TopK, req.MinP),
		logprobs: req.Logprobs, topLogprobs: top, noThinking: noThinking, counter: counter, route: r.URL.Path,
	}
	return &chatJob{
		req: &req, gen: g,
		toolParse: s.cfg.ToolCallParser && len(tools) > 0 && toolChoice != "none",
		id:        s.responseID(counter),
		created:   s.cfg.Clock().Unix(),
	}, nil
}

// parseChoice splits a choice's text with the server's parsers.
func (s *Server) parseChoice(c genChoice, toolParse bool) parsedChoice {
	r, content, calls := ParseAssistant(c.text, s.cfg.ReasoningParser, toolParse)
	return parsedChoice{genChoice: c, reasoning: r, content: content, calls: calls}
}

// chatFinish returns the OpenAI finish_reason of a parsed choice.
func chatFinish(p parsedChoice) string {
	if p.finish == "stop" && len(p.calls) > 0 {
		return "tool_calls"
	}
	return p.finish
}

// handleChat serves POST /v1/chat/completions in both dialects.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	job, err := s.prepareChat(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	// Every use of the prompt's ids ends with this handler: the response
	// is written (or streamed) before it returns.
	defer s.pc.release(job.gen.promptIDs)
	if job.req.Stream {
		s.streamChat(w, r, job)
		return
	}
	choices, err := s.run(r.Context(), job.gen)
	if err != nil {
		if errors.Is(err, r.Context().Err()) {
			return // the client went away; nobody to answer
		}
		s.writeError(w, err)
		return
	}
	parsed := make([]parsedChoice, len(choices))
	for i, c := range choices {
		parsed[i] = s.parseChoice(c, job.toolParse)
	}
	if s.cfg.Dialect == DialectSGLang {
		writeJSON(w, http.StatusOK, s.sglangChatResponse(job, parsed, s.servedVersion(r.Context())))
		return
	}
	writeJSON(w, http.StatusOK, s.vllmChatResponse(job, parsed))
}

// toolCallID derives the id of call k of choice i of a response.
func (s *Server) toolCallID(respID string, choice, k int) string {
	h := newMix("call").add(uint64(choice)).add(uint64(k))
	for _, c := range []byte(respID) {
		h.add(uint64(c))
	}
	a := h.sum()
	if s.cfg.Dialect == DialectSGLang {
		return fmt.Sprintf("call_%016x%08x", a, uint32(newMix("c2").add(a).sum()))
	}
	return fmt.Sprintf("chatcmpl-tool-%016x%016x", a, newMix("c2").add(a).sum())
}
