package llm

import (
	"fmt"
)

// vllmUsage is vLLM's UsageInfo.
type vllmUsage struct {
	PromptTokens        int  `json:"prompt_tokens"`
	TotalTokens         int  `json:"total_tokens"`
	CompletionTokens    int  `json:"completion_tokens"`
	PromptTokensDetails *any `json:"prompt_tokens_details"`
}

// vllmFunctionCall is a tool call's function with arguments as JSON text.
type vllmFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// vllmToolCall is one entry of message.tool_calls.
type vllmToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function vllmFunctionCall `json:"function"`
}

// vllmMessage is vLLM's ChatMessage, every field present as vLLM dumps it.
type vllmMessage struct {
	Role         string         `json:"role"`
	Content      *string        `json:"content"`
	Refusal      *string        `json:"refusal"`
	Annotations  *any           `json:"annotations"`
	Audio        *any           `json:"audio"`
	FunctionCall *any           `json:"function_call"`
	ToolCalls    []vllmToolCall `json:"tool_calls"`
	// Reasoning is current vLLM's field; ReasoningContent is older vLLM's
	// name for it, sent only with Config.ReasoningContent.
	Reasoning        *string `json:"reasoning"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// vllmTopLogprob is ChatCompletionLogProb.
type vllmTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// vllmLogprobEntry is ChatCompletionLogProbsContent.
type vllmLogprobEntry struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []vllmTopLogprob `json:"top_logprobs"`
}

// vllmLogprobs is ChatCompletionLogProbs.
type vllmLogprobs struct {
	Content []vllmLogprobEntry `json:"content"`
}

// vllmChatChoice is ChatCompletionResponseChoice.
type vllmChatChoice struct {
	Index        int           `json:"index"`
	Message      vllmMessage   `json:"message"`
	Logprobs     *vllmLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
	StopReason   any           `json:"stop_reason"`
	TokenIDs     []int         `json:"token_ids"`
}

// vllmChatResponse is ChatCompletionResponse.
type vllmChatResponse struct {
	ID                string           `json:"id"`
	Object            string           `json:"object"`
	Created           int64            `json:"created"`
	Model             string           `json:"model"`
	Choices           []vllmChatChoice `json:"choices"`
	ServiceTier       *string          `json:"service_tier"`
	SystemFingerprint *string          `json:"system_fingerprint"`
	Usage             vllmUsage        `json:"usage"`
	PromptLogprobs    *any             `json:"prompt_logprobs"`
	PromptTokenIDs    []int            `json:"prompt_token_ids"`
	KVTransferParams  *any             `json:"kv_transfer_params"`
}

// tokenString is how a token appears in logprobs: its text, or
// "token_id:N" when the client asked for return_tokens_as_token_ids.
func (s *Server) tokenString(id int, asIDs bool) (string, []int) {
	if asIDs {
		t := fmt.Sprintf("token_id:%d", id)
		return t, bytesOf([]byte(t))
	}
	piece, raw, ok := s.tok.logprobToken(id)
	if !ok {
		// An id out of vocabulary has no text and an empty (not
		// null) bytes list.
		return "", []int{}
	}
	return piece, raw
}

func bytesOf(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// vllmLogprobsOf renders a choice's logprobs in vLLM's chat shape.
func (s *Server) vllmLogprobsOf(lps []tokenLogprob, asIDs bool) *vllmLogprobs {
	out := &vllmLogprobs{Content: make([]vllmLogprobEntry, len(lps))}
	for i, lp := range lps {
		tok, b := s.tokenString(lp.id, asIDs)
		e := vllmLogprobEntry{Token: tok, Logprob: lp.logprob, Bytes: b, TopLogprobs: []vllmTopLogprob{}}
		for _, alt := range lp.top {
			at, ab := s.tokenString(alt.id, asIDs)
			e.TopLogprobs = append(e.TopLogprobs, vllmTopLogprob{Token: at, Logprob: alt.logprob, Bytes: ab})
		}
		out.Content[i] = e
	}
	return out
}

// vllmStopReason is stop_reason: the matched stop string, null otherwise
// (including the EOS case).
func vllmStopReason(c genChoice) any {
	if c.stopStr != "" {
		return c.stopStr
	}
	return nil
}

// vllmChatResponse builds the non-streaming vLLM chat response.
func (s *Server) vllmChatResponse(job *chatJob, parsed []parsedChoice) vllmChatResponse {
	resp := vllmChatResponse{
		ID: "chatcmpl-" + job.id, Object: "chat.completion", Created: job.created, Model: s.cfg.Model,
		Choices: make([]vllmChatChoice, len(parsed)),
	}
	completion := 0
	for i, p := range parsed {
		ch := vllmChatChoice{Index: p.index, Message: s.vllmMessageOf(job.id, p), FinishReason: chatFinish(p), StopReason: vllmStopReason(p.genChoice)}
		if job.req.Logprobs {
			ch.Logprobs = s.vllmLogprobsOf(p.lps, job.req.ReturnTokensAsIDs)
		}
		if job.req.ReturnTokenIDs {
			ch.TokenIDs = p.ids
		}
		resp.Choices[i] = ch
		completion += len(p.ids)
	}
	prompt := len(job.gen.promptIDs)
	resp.Usage = vllmUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	if job.req.ReturnTokenIDs {
		resp.PromptTokenIDs = job.gen.promptIDs
	}
	return resp
}

// vllmMessageOf is the assistant message of a parsed choice of response
// respID.
func (s *Server) vllmMessageOf(respID string, p parsedChoice) vllmMessage {
	msg := vllmMessage{Role: "assistant", ToolCalls: []vllmToolCall{}}
	content := p.content
	if len(p.calls) == 0 || content != "" {
		msg.Content = &content
	}
	if p.reasoning != "" {
		r := p.reasoning
		if s.cfg.ReasoningContent {
			msg.ReasoningContent = &r
		} else {
			msg.Reasoning = &r
		}
	}
	for k, c := range p.calls {
		msg.ToolCalls = append(msg.ToolCalls, vllmToolCall{ID: s.toolCallID(respID, p.index, k), Type: "function", Function: vllmFunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return msg
}
