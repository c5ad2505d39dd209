package llm

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// derenderGenerateChoice is one choice of the GenerateResponse a derender
// request carries.
type derenderGenerateChoice struct {
	Index        int           `json:"index"`
	TokenIDs     []int         `json:"token_ids"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *vllmLogprobs `json:"logprobs"`
}

// derenderRequest is vLLM's DerenderChatRequest and
// DerenderCompletionRequest: a tokens route's response turned back into
// the OpenAI shape without a GPU.
type derenderRequest struct {
	Stream           bool   `json:"stream"`
	Model            string `json:"model"`
	GenerateResponse *struct {
		RequestID string                   `json:"request_id"`
		Choices   []derenderGenerateChoice `json:"choices"`
	} `json:"generate_response"`
	PromptTokens      *int            `json:"prompt_tokens"`
	ChatRequest       json.RawMessage `json:"chat_request"`
	CompletionRequest json.RawMessage `json:"completion_request"`
}

// prepareDerender decodes and validates a derender request and decodes
// each choice's text (special tokens skipped, as detokenization does).
func (s *Server) prepareDerender(r *http.Request) (*derenderRequest, []genChoice, error) {
	var req derenderRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, nil, err
	}
	if req.Model == "" {
		return nil, nil, badRequest("1 validation error: body.model: field required")
	}
	if err := s.checkModel(req.Model); err != nil {
		return nil, nil, err
	}
	if req.Stream {
		return nil, nil, badRequest("stream: streaming derender is not supported by the simulator; derender the whole generate response")
	}
	if req.GenerateResponse == nil {
		return nil, nil, badRequest("1 validation error: body.generate_response: field required")
	}
	out := make([]genChoice, len(req.GenerateResponse.Choices))
	for i, c := range req.GenerateResponse.Choices {
		if err := s.checkIDs(c.TokenIDs); err != nil {
			return nil, nil, badRequest("generate_response.choices[%d].token_ids: %v", i, err)
		}
		text, err := s.tok.DecodeSkipSpecial(c.TokenIDs)
		if err != nil {
			return nil, nil, badRequest("generate_response.choices[%d].token_ids: %v", i, err)
		}
		finish := "stop"
		if c.FinishReason != nil {
			finish = *c.FinishReason
		}
		out[i] = genChoice{index: c.Index, ids: c.TokenIDs, text: text, finish: finish}
	}
	return &req, out, nil
}

// handleChatDerender serves vLLM's POST /v1/chat/completions/derender: the
// sampled ids parsed with the server's reasoning and tool-call parsers into
// a ChatCompletionResponse. Tool calls are parsed when chat_request
// declares tools and does not set tool_choice "none", as on the chat route.
func (s *Server) handleChatDerender(w http.ResponseWriter, r *http.Request) {
	req, choices, err := s.prepareDerender(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var chat struct {
		Tools      []json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage   `json:"tool_choice"`
	}
	if len(req.ChatRequest) > 0 && string(req.ChatRequest) != "null" {
		if err := json.Unmarshal(req.ChatRequest, &chat); err != nil {
			s.writeError(w, badRequest("chat_request: %v", err))
			return
		}
	}
	toolChoice := string(bytes.Trim(bytes.TrimSpace(chat.ToolChoice), `"`))
	toolParse := s.cfg.ToolCallParser && len(chat.Tools) > 0 && toolChoice != "none"
	id := s.responseID(s.nextCounter())
	resp := vllmChatResponse{ID: "chatcmpl-" + id, Object: "chat.completion", Created: s.cfg.Clock().Unix(), Model: req.Model,
		Choices: make([]vllmChatChoice, len(choices))}
	completion := 0
	for i, c := range choices {
		p := s.parseChoice(c, toolParse)
		resp.Choices[i] = vllmChatChoice{Index: c.index, Message: s.vllmMessageOf(id, p), FinishReason: chatFinish(p),
			Logprobs: req.GenerateResponse.Choices[i].Logprobs}
		completion += len(c.ids)
	}
	prompt := 0
	if req.PromptTokens != nil {
		prompt = *req.PromptTokens
	}
	resp.Usage = vllmUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	writeJSON(w, http.StatusOK, resp)
}

// handleCompletionsDerender serves vLLM's POST /v1/completions/derender:
// the sampled ids as a CompletionResponse's text.
func (s *Server) handleCompletionsDerender(w http.ResponseWriter, r *http.Request) {
	req, choices, err := s.prepareDerender(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	resp := completionResponse{ID: "cmpl-" + s.responseID(s.nextCounter()), Object: "text_completion", Created: s.cfg.Clock().Unix(),
		Model: req.Model, Choices: make([]completionChoice, len(choices))}
	completion := 0
	for i, c := range choices {
		resp.Choices[i] = completionChoice{Index: c.index, Text: c.text, FinishReason: strp(c.finish)}
		completion += len(c.ids)
	}
	prompt := 0
	if req.PromptTokens != nil {
		prompt = *req.PromptTokens
	}
	resp.Usage = vllmUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	writeJSON(w, http.StatusOK, resp)
}
