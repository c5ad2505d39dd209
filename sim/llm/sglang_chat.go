package llm

// sglangUsage is SGLang's UsageInfo.
type sglangUsage struct {
	PromptTokens        int  `json:"prompt_tokens"`
	TotalTokens         int  `json:"total_tokens"`
	CompletionTokens    int  `json:"completion_tokens"`
	PromptTokensDetails *any `json:"prompt_tokens_details"`
	ReasoningTokens     int  `json:"reasoning_tokens"`
}

// sglangToolCall is SGLang's ToolCall.
type sglangToolCall struct {
	ID       string           `json:"id"`
	Index    int              `json:"index"`
	Type     string           `json:"type"`
	Function vllmFunctionCall `json:"function"`
}

// sglangMessage is SGLang's ChatMessage.
type sglangMessage struct {
	Role             string           `json:"role"`
	Content          *string          `json:"content"`
	ReasoningContent *string          `json:"reasoning_content"`
	ToolCalls        []sglangToolCall `json:"tool_calls"`
}

// sglangTopLogprob is SGLang's TopLogprob (note the field order).
type sglangTopLogprob struct {
	Token   string  `json:"token"`
	Bytes   []int   `json:"bytes"`
	Logprob float64 `json:"logprob"`
}

// sglangLogprobEntry is SGLang's ChatCompletionTokenLogprob.
type sglangLogprobEntry struct {
	Token       string             `json:"token"`
	Bytes       []int              `json:"bytes"`
	Logprob     float64            `json:"logprob"`
	TopLogprobs []sglangTopLogprob `json:"top_logprobs"`
}

type sglangLogprobs struct {
	Content []sglangLogprobEntry `json:"content"`
}

// sglangChatChoice is SGLang's ChatCompletionResponseChoice with the
// training extensions (prompt_token_ids, meta_info) present only on request.
type sglangChatChoice struct {
	Index          int             `json:"index"`
	Message        sglangMessage   `json:"message"`
	Logprobs       *sglangLogprobs `json:"logprobs"`
	FinishReason   string          `json:"finish_reason"`
	MatchedStop    any             `json:"matched_stop"`
	PromptTokenIDs []int           `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int           `json:"token_ids,omitempty"`
	MetaInfo       *sglangMeta     `json:"meta_info,omitempty"`
}

// sglangChatResponse is SGLang's ChatCompletionResponse.
type sglangChatResponse struct {
	ID       string             `json:"id"`
	Object   string             `json:"object"`
	Created  int64              `json:"created"`
	Model    string             `json:"model"`
	Choices  []sglangChatChoice `json:"choices"`
	Usage    sglangUsage        `json:"usage"`
	Metadata map[string]string  `json:"metadata"`
}

// sglangMatchedStop is matched_stop: the EOS id or the stop string, null
// when the sequence ended another way.
func (s *Server) sglangMatchedStop(c genChoice) any {
	switch {
	case c.stopStr != "":
		return c.stopStr
	case c.eos:
		return s.tok.SpecialID(IMEnd)
	}
	return nil
}

// sglangLogprobsOf renders a choice's logprobs in SGLang's chat shape.
func (s *Server) sglangLogprobsOf(lps []tokenLogprob) *sglangLogprobs {
	out := &sglangLogprobs{Content: make([]sglangLogprobEntry, len(lps))}
	for i, lp := range lps {
		tok, b := s.tokenString(lp.id, false)
		e := sglangLogprobEntry{Token: tok, Bytes: b, Logprob: lp.logprob, TopLogprobs: []sglangTopLogprob{}}
		for _, alt := range lp.top {
			at, ab := s.tokenString(alt.id, false)
			e.TopLogprobs = append(e.TopLogprobs, sglangTopLogprob{Token: at, Bytes: ab, Logprob: alt.logprob})
		}
		out.Content[i] = e
	}
	return out
}

// sglangChatResponse builds the non-streaming SGLang chat response.
func (s *Server) sglangChatResponse(job *chatJob, parsed []parsedChoice, version string) sglangChatResponse {
	resp := sglangChatResponse{
		ID: job.id, Object: "chat.completion", Created: job.created, Model: s.cfg.Model,
		Choices:  make([]sglangChatChoice, len(parsed)),
		Metadata: map[string]string{"weight_version": version},
	}
	completion := 0
	for i, p := range parsed {
		msg := sglangMessage{Role: "assistant"}
		content := p.content
		if len(p.calls) == 0 || content != "" {
			msg.Content = &content
		}
		if p.reasoning != "" {
			r := p.reasoning
			msg.ReasoningContent = &r
		}
		for k, c := range p.calls {
			msg.ToolCalls = append(msg.ToolCalls, sglangToolCall{ID: s.toolCallID(job.id, p.index, k), Index: k, Type: "function", Function: vllmFunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
		ch := sglangChatChoice{Index: p.index, Message: msg, FinishReason: chatFinish(p), MatchedStop: s.sglangMatchedStop(p.genChoice)}
		if len(p.calls) > 0 && p.finish == "stop" {
			ch.MatchedStop = nil
		}
		if job.req.Logprobs {
			ch.Logprobs = s.sglangLogprobsOf(p.lps)
		}
		if job.req.ReturnPromptTokenIDs {
			ch.PromptTokenIDs = job.gen.promptIDs
		}
		if job.req.ReturnMetaInfo {
			ch.MetaInfo = s.sglangMetaOf(job.id, job.gen, p.genChoice, version, job.req.Logprobs, true)
		}
		resp.Choices[i] = ch
		completion += len(p.ids)
	}
	prompt := len(job.gen.promptIDs)
	resp.Usage = sglangUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return resp
}
