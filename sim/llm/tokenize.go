package llm

import (
	"encoding/json"
	"net/http"
)

// tokenizeRequest is the body of /tokenize (vLLM) and /v1/tokenize
// (SGLang): a prompt, or messages rendered with the chat template.
type tokenizeRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	ReturnTokenStrs     bool            `json:"return_token_strs"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`
	ContinueFinal       bool            `json:"continue_final_message"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
}

// vllmTokenizeResponse is vLLM's TokenizeResponse.
type vllmTokenizeResponse struct {
	Count       int       `json:"count"`
	MaxModelLen int       `json:"max_model_len"`
	Tokens      []int     `json:"tokens"`
	TokenStrs   *[]string `json:"token_strs"`
}

// sglangTokenizeResponse is SGLang's TokenizeResponse.
type sglangTokenizeResponse struct {
	Tokens      []int `json:"tokens"`
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
}

// handleTokenize serves POST /tokenize and POST /v1/tokenize.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if err := s.decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.writeError(w, err)
		return
	}
	hasPrompt := len(req.Prompt) > 0 && string(req.Prompt) != "null"
	if hasPrompt == (req.Messages != nil) {
		s.writeError(w, badRequest("Exactly one of 'prompt' or 'messages' must be provided."))
		return
	}
	var text string
	if hasPrompt {
		if err := json.Unmarshal(req.Prompt, &text); err != nil {
			s.writeError(w, badRequest("1 validation error: body.prompt: input should be a valid string"))
			return
		}
	} else {
		msgs, err := toMessages(req.Messages)
		if err != nil {
			s.writeError(w, err)
			return
		}
		s.inputReasoning(req.Messages, msgs)
		tools, err := toTools(req.Tools)
		if err != nil {
			s.writeError(w, err)
			return
		}
		noThinking := false
		if v, ok := req.ChatTemplateKwargs["enable_thinking"].(bool); ok && !v {
			noThinking = true
		}
		addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		if r.URL.Path == "/v1/tokenize" {
			// SGLang's TokenizeRequest has no add_generation_prompt: it
			// renders messages as a chat request, whose model drops the
			// field, so the generation prompt is always added (but for
			// continue_final_message).
			addGen = !req.ContinueFinal
		}
		text, err = s.template(noThinking).Render(msgs, tools, addGen)
		if err != nil {
			s.writeError(w, badRequest("%v", err))
			return
		}
	}
	ids := s.tok.Encode(text)
	if s.cfg.Dialect == DialectSGLang {
		writeJSON(w, http.StatusOK, sglangTokenizeResponse{Tokens: ids, Count: len(ids), MaxModelLen: s.cfg.MaxModelLen})
		return
	}
	resp := vllmTokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids}
	if req.ReturnTokenStrs {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i], _, _ = s.tok.Token(id)
		}
		resp.TokenStrs = &strs
	}
	writeJSON(w, http.StatusOK, resp)
}

// detokenizeRequest is the body of /detokenize and /v1/detokenize.
type detokenizeRequest struct {
	Model             string `json:"model"`
	Tokens            []int  `json:"tokens"`
	SkipSpecialTokens *bool  `json:"skip_special_tokens"`
}

// handleDetokenize serves POST /detokenize (vLLM: {"prompt"}, special
// tokens kept) and POST /v1/detokenize (SGLang: {"text"}, special tokens
// skipped unless skip_special_tokens is false).
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if err := s.decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.checkIDs(req.Tokens); err != nil {
		s.writeError(w, err)
		return
	}
	if s.cfg.Dialect == DialectSGLang {
		decode := s.tok.DecodeSkipSpecial
		if req.SkipSpecialTokens != nil && !*req.SkipSpecialTokens {
			decode = s.tok.Decode
		}
		text, err := decode(req.Tokens)
		if err != nil {
			s.writeError(w, badRequest("%v", err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"text": text})
		return
	}
	text, err := s.tok.Decode(req.Tokens)
	if err != nil {
		s.writeError(w, badRequest("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}
