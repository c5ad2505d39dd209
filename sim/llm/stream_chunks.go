package llm

import "encoding/json"

// streamToolCall is a tool-call delta (vLLM's DeltaToolCall, SGLang's
// ToolCall); the simulator sends each call whole in one delta.
type streamToolCall struct {
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Index    int               `json:"index"`
	Function *vllmFunctionCall `json:"function,omitempty"`
}

// vllmDelta is vLLM's DeltaMessage as serialised with exclude_unset.
type vllmDelta struct {
	Role             string           `json:"role,omitempty"`
	Content          *string          `json:"content,omitempty"`
	Reasoning        *string          `json:"reasoning,omitempty"`
	ReasoningContent *string          `json:"reasoning_content,omitempty"`
	ToolCalls        []streamToolCall `json:"tool_calls,omitempty"`
}

type vllmStreamChoice struct {
	Index        int             `json:"index"`
	Delta        vllmDelta       `json:"delta"`
	Logprobs     *vllmLogprobs   `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	TokenIDs     []int           `json:"token_ids,omitempty"`
}

type vllmStreamChunk struct {
	ID             string             `json:"id"`
	Object         string             `json:"object"`
	Created        int64              `json:"created"`
	Model          string             `json:"model"`
	Choices        []vllmStreamChoice `json:"choices"`
	Usage          *vllmUsage         `json:"usage,omitempty"`
	PromptTokenIDs []int              `json:"prompt_token_ids,omitempty"`
}

// sglangDelta is SGLang's DeltaMessage, dumped with its nulls.
type sglangDelta struct {
	Role             *string          `json:"role"`
	Content          *string          `json:"content"`
	ReasoningContent *string          `json:"reasoning_content"`
	ToolCalls        []streamToolCall `json:"tool_calls"`
}

type sglangStreamChoice struct {
	Index        int             `json:"index"`
	Delta        sglangDelta     `json:"delta"`
	Logprobs     *sglangLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	MatchedStop  any             `json:"matched_stop"`
}

type sglangStreamChunk struct {
	ID      string               `json:"id"`
	Object  string               `json:"object"`
	Created int64                `json:"created"`
	Model   string               `json:"model"`
	Choices []sglangStreamChoice `json:"choices"`
	Usage   *sglangUsage         `json:"usage"`
}

// chunker builds the chunks of one streamed chat response.
type chunker struct {
	s       *Server
	job     *chatJob
	version string
}

func newChunker(s *Server, job *chatJob, version string) *chunker {
	return &chunker{s: s, job: job, version: version}
}

func (c *chunker) sglang() bool { return c.s.cfg.Dialect == DialectSGLang }

func strp(s string) *string { return &s }

// roleChunk opens choice i; the first chunk of the response carries the
// prompt token ids when the client asked for return_token_ids (vLLM).
func (c *chunker) roleChunk(i int, first bool) any {
	empty := ""
	if c.sglang() {
		return c.sglangChunk(sglangStreamChoice{Index: i, Delta: sglangDelta{Role: strp("assistant"), Content: &empty}})
	}
	ch := c.vllmChunk(vllmStreamChoice{Index: i, Delta: vllmDelta{Role: "assistant", Content: &empty}})
	if first && c.job.req.ReturnTokenIDs {
		ch.PromptTokenIDs = c.job.gen.promptIDs
	}
	return ch
}

// tokenChunk carries one output token of choice p.
func (c *chunker) tokenChunk(p parsedChoice, d tokenDelta, step int, last bool) any {
	s := c.s
	callID := func(k int) string { return s.toolCallID(c.job.id, p.index, k) }
	var finish *string
	if last {
		finish = strp(chatFinish(p))
	}
	if c.sglang() {
		delta := sglangDelta{ToolCalls: toolCallsOf(p, d.calls, callID)}
		if d.content != "" {
			delta.Content = strp(d.content)
		}
		if d.reasoning != "" {
			delta.ReasoningContent = strp(d.reasoning)
		}
		ch := sglangStreamChoice{Index: p.index, Delta: delta, FinishReason: finish}
		if c.job.req.Logprobs {
			ch.Logprobs = s.sglangLogprobsOf(p.lps[step : step+1])
		}
		if last {
			ch.MatchedStop = s.sglangMatchedStop(p.genChoice)
			if len(p.calls) > 0 && p.finish == "stop" {
				ch.MatchedStop = nil
			}
		}
		return c.sglangChunk(ch)
	}
	delta := vllmDelta{ToolCalls: toolCallsOf(p, d.calls, callID)}
	if d.content != "" {
		delta.Content = strp(d.content)
	}
	if d.reasoning != "" {
		if s.cfg.ReasoningContent {
			delta.ReasoningContent = strp(d.reasoning)
		} else {
			delta.Reasoning = strp(d.reasoning)
		}
	}
	ch := vllmStreamChoice{Index: p.index, Delta: delta, FinishReason: finish}
	if c.job.req.Logprobs {
		ch.Logprobs = s.vllmLogprobsOf(p.lps[step:step+1], c.job.req.ReturnTokensAsIDs)
	}
	if last {
		ch.StopReason, _ = json.Marshal(vllmStopReason(p.genChoice))
	}
	if c.job.req.ReturnTokenIDs {
		ch.TokenIDs = []int{d.id}
	}
	return c.vllmChunk(ch)
}

// abortChunk ends choice i with finish_reason "abort".
func (c *chunker) abortChunk(i int) any {
	if c.sglang() {
		return c.sglangChunk(sglangStreamChoice{Index: i, FinishReason: strp("abort")})
	}
	return c.vllmChunk(vllmStreamChoice{Index: i, FinishReason: strp("abort"), StopReason: json.RawMessage("null")})
}

// usageChunk is the trailing usage chunk of stream_options.include_usage.
func (c *chunker) usageChunk(ps []parsedChoice) any {
	prompt, completion := len(c.job.gen.promptIDs), 0
	for _, p := range ps {
		completion += len(p.ids)
	}
	if c.sglang() {
		ch := c.sglangChunk()
		ch.Usage = &sglangUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
		return ch
	}
	ch := c.vllmChunk()
	ch.Usage = &vllmUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	return ch
}

func (c *chunker) vllmChunk(choices ...vllmStreamChoice) *vllmStreamChunk {
	if choices == nil {
		choices = []vllmStreamChoice{}
	}
	return &vllmStreamChunk{ID: "chatcmpl-" + c.job.id, Object: "chat.completion.chunk", Created: c.job.created, Model: c.s.cfg.Model, Choices: choices}
}

func (c *chunker) sglangChunk(choices ...sglangStreamChoice) *sglangStreamChunk {
	if choices == nil {
		choices = []sglangStreamChoice{}
	}
	return &sglangStreamChunk{ID: c.job.id, Object: "chat.completion.chunk", Created: c.job.created, Model: c.s.cfg.Model, Choices: choices}
}
