package llm

// Hand-written encoders of the chat response types, members in the order of
// their struct tags. See jsonAppender.

var (
	_ jsonAppender = vllmChatResponse{}
	_ jsonAppender = sglangChatResponse{}
	_ jsonAppender = sglangFinishReason{}
)

func (r vllmChatResponse) appendJSON(e *jsonEnc) {
	e.chatHead(r.ID, r.Object, r.Created, r.Model)
	e.key(",", "choices")
	writeList(e, r.Choices, func(c *vllmChatChoice) { c.appendJSON(e) })
	e.key(",", "service_tier")
	e.strPtr(r.ServiceTier)
	e.key(",", "system_fingerprint")
	e.strPtr(r.SystemFingerprint)
	e.key(",", "usage")
	u := r.Usage
	e.usageHead(u.PromptTokens, u.TotalTokens, u.CompletionTokens, u.PromptTokensDetails)
	e.b = append(e.b, '}')
	e.key(",", "prompt_logprobs")
	e.anyPtr(r.PromptLogprobs)
	e.key(",", "prompt_token_ids")
	e.ints(r.PromptTokenIDs)
	e.key(",", "kv_transfer_params")
	e.anyPtr(r.KVTransferParams)
	e.b = append(e.b, '}')
}

func (c *vllmChatChoice) appendJSON(e *jsonEnc) {
	e.key("{", "index")
	e.int(c.Index)
	e.key(",", "message")
	m := &c.Message
	e.key("{", "role")
	e.str(m.Role)
	e.key(",", "content")
	e.strPtr(m.Content)
	e.key(",", "refusal")
	e.strPtr(m.Refusal)
	e.key(",", "annotations")
	e.anyPtr(m.Annotations)
	e.key(",", "audio")
	e.anyPtr(m.Audio)
	e.key(",", "function_call")
	e.anyPtr(m.FunctionCall)
	e.key(",", "tool_calls")
	writeList(e, m.ToolCalls, func(tc *vllmToolCall) {
		e.key("{", "id")
		e.str(tc.ID)
		e.key(",", "type")
		e.str(tc.Type)
		e.key(",", "function")
		tc.Function.appendJSON(e)
		e.b = append(e.b, '}')
	})
	e.key(",", "reasoning")
	e.strPtr(m.Reasoning)
	if m.ReasoningContent != nil {
		e.key(",", "reasoning_content")
		e.strPtr(m.ReasoningContent)
	}
	e.b = append(e.b, '}')
	e.key(",", "logprobs")
	if c.Logprobs == nil {
		e.raw("null")
	} else {
		c.Logprobs.appendJSON(e)
	}
	e.key(",", "finish_reason")
	e.str(c.FinishReason)
	e.key(",", "stop_reason")
	e.any(c.StopReason)
	e.key(",", "token_ids")
	e.ints(c.TokenIDs)
	e.b = append(e.b, '}')
}

func (f vllmFunctionCall) appendJSON(e *jsonEnc) {
	e.key("{", "name")
	e.str(f.Name)
	e.key(",", "arguments")
	e.str(f.Arguments)
	e.b = append(e.b, '}')
}

func (l *vllmLogprobs) appendJSON(e *jsonEnc) { appendLogprobContent(e, l.Content, false) }

func (r sglangChatResponse) appendJSON(e *jsonEnc) {
	e.chatHead(r.ID, r.Object, r.Created, r.Model)
	e.key(",", "choices")
	writeList(e, r.Choices, func(c *sglangChatChoice) { c.appendJSON(e) })
	e.key(",", "usage")
	u := r.Usage
	e.usageHead(u.PromptTokens, u.TotalTokens, u.CompletionTokens, u.PromptTokensDetails)
	e.key(",", "reasoning_tokens")
	e.int(u.ReasoningTokens)
	e.b = append(e.b, '}')
	e.key(",", "metadata")
	e.stringMap(r.Metadata)
	e.b = append(e.b, '}')
}

func (c *sglangChatChoice) appendJSON(e *jsonEnc) {
	e.key("{", "index")
	e.int(c.Index)
	e.key(",", "message")
	m := &c.Message
	e.key("{", "role")
	e.str(m.Role)
	e.key(",", "content")
	e.strPtr(m.Content)
	e.key(",", "reasoning_content")
	e.strPtr(m.ReasoningContent)
	e.key(",", "tool_calls")
	writeList(e, m.ToolCalls, func(tc *sglangToolCall) {
		e.key("{", "id")
		e.str(tc.ID)
		e.key(",", "index")
		e.int(tc.Index)
		e.key(",", "type")
		e.str(tc.Type)
		e.key(",", "function")
		tc.Function.appendJSON(e)
		e.b = append(e.b, '}')
	})
	e.b = append(e.b, '}')
	e.key(",", "logprobs")
	if c.Logprobs == nil {
		e.raw("null")
	} else {
		c.Logprobs.appendJSON(e)
	}
	e.key(",", "finish_reason")
	e.str(c.FinishReason)
	e.key(",", "matched_stop")
	e.any(c.MatchedStop)
	if len(c.PromptTokenIDs) > 0 {
		e.key(",", "prompt_token_ids")
		e.ints(c.PromptTokenIDs)
	}
	if len(c.TokenIDs) > 0 {
		e.key(",", "token_ids")
		e.ints(c.TokenIDs)
	}
	if c.MetaInfo != nil {
		e.key(",", "meta_info")
		c.MetaInfo.appendJSON(e)
	}
	e.b = append(e.b, '}')
}

func (l *sglangLogprobs) appendJSON(e *jsonEnc) { appendLogprobContent(e, l.Content, true) }

// logprob is one token's logprob as both dialects carry it.
type logprob interface {
	parts() (token string, logprob float64, bytes []int)
}

// logprobEntry is a logprob with its top alternatives.
type logprobEntry[T logprob] interface {
	logprob
	top() []T
}

func (t vllmTopLogprob) parts() (string, float64, []int)     { return t.Token, t.Logprob, t.Bytes }
func (t sglangTopLogprob) parts() (string, float64, []int)   { return t.Token, t.Logprob, t.Bytes }
func (t vllmLogprobEntry) parts() (string, float64, []int)   { return t.Token, t.Logprob, t.Bytes }
func (t sglangLogprobEntry) parts() (string, float64, []int) { return t.Token, t.Logprob, t.Bytes }
func (t vllmLogprobEntry) top() []vllmTopLogprob             { return t.TopLogprobs }
func (t sglangLogprobEntry) top() []sglangTopLogprob         { return t.TopLogprobs }

// appendLogprobContent writes {"content": [...]} with each entry's fields in
// its dialect's order: vLLM writes token, logprob, bytes; SGLang token,
// bytes, logprob (bytesFirst).
func appendLogprobContent[E logprobEntry[T], T logprob](e *jsonEnc, content []E, bytesFirst bool) {
	e.key("{", "content")
	writeList(e, content, func(entry *E) {
		appendLogprobFields(e, *entry, bytesFirst)
		e.key(",", "top_logprobs")
		writeList(e, (*entry).top(), func(top *T) {
			appendLogprobFields(e, *top, bytesFirst)
			e.b = append(e.b, '}')
		})
		e.b = append(e.b, '}')
	})
	e.b = append(e.b, '}')
}

// appendLogprobFields opens an object and writes token, logprob and bytes
// in the dialect's order; the caller closes it.
func appendLogprobFields[L logprob](e *jsonEnc, lp L, bytesFirst bool) {
	token, value, raw := lp.parts()
	e.key("{", "token")
	e.str(token)
	if bytesFirst {
		e.key(",", "bytes")
		e.ints(raw)
	}
	e.key(",", "logprob")
	e.float(value)
	if !bytesFirst {
		e.key(",", "bytes")
		e.ints(raw)
	}
}

func (m *sglangMeta) appendJSON(e *jsonEnc) {
	e.key("{", "id")
	e.str(m.ID)
	e.key(",", "finish_reason")
	e.any(m.FinishReason)
	e.key(",", "prompt_tokens")
	e.int(m.PromptTokens)
	e.key(",", "weight_version")
	e.str(m.WeightVersion)
	e.key(",", "total_retractions")
	e.int(m.TotalRetractions)
	if m.InputTokenLogprobs != nil {
		e.key(",", "input_token_logprobs")
		e.triples(*m.InputTokenLogprobs)
	}
	if m.OutputTokenLogprobs != nil {
		e.key(",", "output_token_logprobs")
		e.triples(*m.OutputTokenLogprobs)
	}
	if m.InputTopLogprobs != nil {
		e.key(",", "input_top_logprobs")
		writeList(e, *m.InputTopLogprobs, func(v *any) { e.any(*v) })
	}
	if m.OutputTopLogprobs != nil {
		e.key(",", "output_top_logprobs")
		writeList(e, *m.OutputTopLogprobs, func(ts *[][3]any) { e.triples(*ts) })
	}
	e.key(",", "completion_tokens")
	e.int(m.CompletionTokens)
	e.key(",", "cached_tokens")
	e.int(m.CachedTokens)
	e.key(",", "e2e_latency")
	e.float(m.E2ELatency)
	e.b = append(e.b, '}')
}

func (f sglangFinishReason) appendJSON(e *jsonEnc) {
	e.key("{", "type")
	e.str(f.Type)
	if f.Matched != nil {
		e.key(",", "matched")
		e.any(f.Matched)
	}
	if f.Length != 0 {
		e.key(",", "length")
		e.int(f.Length)
	}
	if f.Message != "" {
		e.key(",", "message")
		e.str(f.Message)
	}
	e.b = append(e.b, '}')
}
