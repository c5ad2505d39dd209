package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"
)

// SGLang capture modes, detected on the first call.
const (
	sglangUnknown int32 = iota
	sglangChat          // ≥ 0.5.13: ids and logprobs on the chat route
	sglangNative        // older: /v1/tokenize + /generate
)

// sglangDialect talks to SGLang. Newer servers return the prompt ids on
// choices[].prompt_token_ids and the sampled ids with their logprobs in
// choices[].meta_info.output_token_logprobs when asked with
// return_prompt_token_ids and return_meta_info. For older servers the
// client renders the prompt with /v1/tokenize (messages form), generates
// from the ids on the native /generate route, and parses reasoning and
// Hermes tool calls itself. The mode is detected on the first call and
// logged.
type sglangDialect struct {
	mode atomic.Int32
}

func (d *sglangDialect) chat(ctx context.Context, c *Client, req Request, s Sampling) (*Turn, *endpoint, int, error) {
	total := 0
	// SGLang's chat route refuses return_prompt_token_ids and
	// return_meta_info on a stream (400), so a streamed call generates on
	// the native route, whose events carry the output ids and logprobs.
	if d.mode.Load() != sglangNative && !c.stream.Load() {
		turn, e, n, fallback, err := d.chatRoute(ctx, c, req, s)
		total += n
		if err != nil || !fallback {
			return turn, e, total, err
		}
		if d.mode.CompareAndSwap(sglangUnknown, sglangNative) {
			c.log.Warn("sglang chat route returned no token ids: assuming SGLang older than 0.5.13, using /v1/tokenize and /generate",
				"role", c.role, "endpoint", e.display)
		}
	}
	turn, e, n, err := d.native(ctx, c, req, s, c.stream.Load())
	total += n
	setAttempts(err, total)
	return turn, e, total, err
}

// chatRoute calls /v1/chat/completions. fallback reports that the server
// gave no token data while the mode was still unknown.
func (d *sglangDialect) chatRoute(ctx context.Context, c *Client, req Request, s Sampling) (*Turn, *endpoint, int, bool, error) {
	mode := d.mode.Load()
	cr := c.chatRequest(req, s)
	zero := 0
	cr.LogProbs, cr.TopLogProbs = true, &zero
	cr.ReturnPromptTokenIDs, cr.ReturnMetaInfo = true, true
	body, err := encodeChatRequestPrefix(cr, &c.tools, req.Prefix)
	if err != nil {
		return nil, nil, 0, false, fmt.Errorf("llm role %s: encode request: %w", c.role, err)
	}
	var (
		turn, aborted *Turn
		fallback      bool
	)
	decode := func(b []byte, h http.Header) error {
		r, err := decodeChatPrefix(b, false, req.Prefix, c.met)
		if err != nil && (r == nil || !errors.Is(err, ErrAborted)) {
			return err
		}
		// err is nil or the abort of a generation whose tokens are kept.
		resp, ch := r.resp, r.ch
		abortMessage := ""
		if ch.MetaInfo != nil {
			if msg, ok := sglangAbort(ch.MetaInfo.FinishReason); ok {
				abortMessage = msg
				err = abortError(msg)
			}
		}
		t := baseTurn(resp, ch, h)
		t.PromptIDs = ch.PromptTokenIDs
		if ch.MetaInfo != nil {
			lps := ch.MetaInfo.OutputTokenLogprobs
			t.CompletionIDs = make([]int32, len(lps))
			t.Logprobs = make([]float64, len(lps))
			for i, lp := range lps {
				t.CompletionIDs[i], t.Logprobs[i] = lp.ID, lp.Logprob
			}
			if len(ch.TokenIDs) > 0 && !equalInts(ch.TokenIDs, t.CompletionIDs) {
				return &DecodeError{Err: fmt.Errorf("%w: token_ids and output_token_logprobs disagree", ErrLogprobMismatch)}
			}
		}
		if err != nil {
			if p := partialTurn(t, abortMessage); p != nil {
				aborted = p
			}
			return err
		}
		if mode == sglangUnknown && len(t.PromptIDs) == 0 && ch.MetaInfo == nil {
			fallback = true
			return nil
		}
		if err := checkTokens(t); err != nil {
			return err
		}
		req.Prefix.rememberTurn(r.choicePromptText, t)
		turn = t
		return nil
	}
	e, n, err := c.post(ctx, req.TrajectoryKey, nil, "/v1/chat/completions", body, decode)
	if err != nil {
		return aborted, e, n, false, err
	}
	if !fallback && mode == sglangUnknown && d.mode.CompareAndSwap(sglangUnknown, sglangChat) {
		c.log.Info("sglang chat route returns token ids (SGLang ≥ 0.5.13)", "role", c.role, "endpoint", e.display)
	}
	return turn, e, n, fallback, nil
}

// native renders the prompt with /v1/tokenize and generates with /generate,
// streamed when stream is set.
func (d *sglangDialect) native(ctx context.Context, c *Client, req Request, s Sampling, stream bool) (*Turn, *endpoint, int, error) {
	ids, te, tn, err := c.tokenize(ctx, req, s, nil, "/v1/tokenize")
	if err != nil {
		return nil, te, tn, err
	}
	return c.generateIDs(ctx, req.TrajectoryKey, te, tn, ids, s, stream, c.parser.parse)
}

// generateIDs generates on /generate from ids (pinned to te, the endpoint
// that tokenized them, after its tn attempts), streamed when stream is
// set; base makes the turn of the generated text, before its ids,
// logprobs and finish are filled in.
func (c *Client) generateIDs(ctx context.Context, key string, te *endpoint, tn int, ids []int32, s Sampling, stream bool, base func(text string) *Turn) (*Turn, *endpoint, int, error) {
	sp := generateParams(s)
	body, err := json.Marshal(GenerateRequest{InputIDs: ids, SamplingParams: sp, ReturnLogprob: true, Stream: stream})
	if err != nil {
		return nil, te, tn, fmt.Errorf("llm role %s: encode generate request: %w", c.role, err)
	}
	var turn, aborted *Turn
	// keepCut keeps the tokens of a stream cut before its last event.
	keepCut := func(g *GenerateResponse, h http.Header, reason string) {
		if g == nil {
			return
		}
		t := base(g.Text)
		t.PromptIDs, t.CompletionIDs = ids, g.OutputIDs
		t.Logprobs = make([]float64, len(g.MetaInfo.OutputTokenLogprobs))
		for i, lp := range g.MetaInfo.OutputTokenLogprobs {
			t.Logprobs[i] = lp.Logprob
		}
		t.WeightVersion = g.MetaInfo.WeightVersion
		t.Usage = openai.Usage{PromptTokens: len(ids), CompletionTokens: len(g.OutputIDs), TotalTokens: len(ids) + len(g.OutputIDs)}
		if p := cutTurn(t, reason); p != nil {
			aborted = p
		}
	}
	judge := func(g *GenerateResponse, b []byte, h http.Header) error {
		t, p, err := judgeGenerate(g, b, h, ids, base(g.Text))
		if p != nil {
			aborted = p
		}
		turn = t
		return err
	}
	var (
		e *endpoint
		n int
	)
	if stream {
		decode := func(b []byte, h http.Header) error {
			g, err := decodeGenerateStream(b, c.met)
			if err != nil {
				if isStreamEnded(err) {
					keepCut(g, h, ErrStreamEnded.Error())
				}
				return err
			}
			return judge(g, b, h)
		}
		cut := func(b []byte, h http.Header, reason string) {
			g, _ := decodeGenerateStream(b, c.met)
			keepCut(g, h, reason)
		}
		e, n, err = c.postStream(ctx, key, te, "/generate", body, decode, cut)
	} else {
		decode := func(b []byte, h http.Header) error {
			g, err := decodeGenerate(b, c.met)
			if err != nil {
				return &DecodeError{Err: fmt.Errorf("%w: %v", ErrMalformedResponse, err), Snippet: snippet(b)}
			}
			return judge(g, b, h)
		}
		e, n, err = c.post(ctx, key, te, "/generate", body, decode)
	}
	n += tn
	if err != nil {
		setAttempts(err, n)
		return aborted, e, n, err
	}
	return turn, e, n, nil
}

// generateParams is /generate's sampling_params for s.
func generateParams(s Sampling) map[string]any {
	sp := map[string]any{"skip_special_tokens": true}
	if s.Temperature != nil {
		sp["temperature"] = *s.Temperature
	}
	if s.TopP != nil {
		sp["top_p"] = *s.TopP
	}
	if s.TopK != nil {
		sp["top_k"] = *s.TopK
	}
	if s.MinP != nil {
		sp["min_p"] = *s.MinP
	}
	if s.RepetitionPenalty != nil {
		sp["repetition_penalty"] = *s.RepetitionPenalty
	}
	if s.PresencePenalty != nil {
		sp["presence_penalty"] = *s.PresencePenalty
	}
	if s.FrequencyPenalty != nil {
		sp["frequency_penalty"] = *s.FrequencyPenalty
	}
	if s.MaxTokens > 0 {
		sp["max_new_tokens"] = s.MaxTokens
	}
	if len(s.Stop) > 0 {
		sp["stop"] = s.Stop
	}
	if s.Seed != nil {
		sp["sampling_seed"] = *s.Seed
	}
	return sp
}

// judgeGenerate fills t, the turn of a /generate answer g from the prompt
// ids, with its tokens, finish and usage and checks them. An aborted
// generation returns its partial turn (nil when it holds no usable tokens)
// with a *DecodeError wrapping ErrAborted.
func judgeGenerate(g *GenerateResponse, b []byte, h http.Header, ids []int32, t *Turn) (turn, aborted *Turn, err error) {
	abortMessage, isAbort := sglangAbort(g.MetaInfo.FinishReason)
	var fin sglangFinish
	if err := json.Unmarshal(g.MetaInfo.FinishReason, &fin); err != nil || fin.Type == "" {
		return nil, nil, &DecodeError{Err: fmt.Errorf("%w: meta_info.finish_reason missing", ErrMalformedResponse), Snippet: snippet(b)}
	}
	t.PromptIDs = ids
	t.CompletionIDs = g.OutputIDs
	lps := g.MetaInfo.OutputTokenLogprobs
	t.Logprobs = make([]float64, len(lps))
	for i, lp := range lps {
		if i < len(g.OutputIDs) && lp.ID != g.OutputIDs[i] {
			return nil, nil, &DecodeError{Err: fmt.Errorf("%w: output_ids[%d]=%d but its logprob is for %d", ErrLogprobMismatch, i, g.OutputIDs[i], lp.ID)}
		}
		t.Logprobs[i] = lp.Logprob
	}
	t.FinishReason = fin.Type
	if len(t.ToolCalls) > 0 && fin.Type == "stop" {
		t.FinishReason = string(openai.FinishReasonToolCalls)
	}
	t.StopReason = rawStopReason(fin.Matched)
	t.WeightVersion = g.MetaInfo.WeightVersion
	if t.WeightVersion == "" {
		t.WeightVersion = h.Get(weightVersionHeader)
	}
	t.Usage = openai.Usage{PromptTokens: len(ids), CompletionTokens: len(g.OutputIDs), TotalTokens: len(ids) + len(g.OutputIDs)}
	if isAbort {
		return nil, partialTurn(t, abortMessage), abortError(abortMessage)
	}
	if err := checkTokens(t); err != nil {
		return nil, nil, err
	}
	return t, nil, nil
}

// sglangAbort reports whether a meta_info.finish_reason object has type
// "abort", and its message.
func sglangAbort(raw json.RawMessage) (message string, ok bool) {
	if len(raw) == 0 {
		return "", false
	}
	var fin sglangFinish
	if json.Unmarshal(raw, &fin) == nil && fin.Type == "abort" {
		return fin.Message, true
	}
	return "", false
}

// abortError is the *DecodeError of an attempt the server aborted, with
// its message.
func abortError(message string) error {
	if message == "" {
		return &DecodeError{Err: ErrAborted}
	}
	return &DecodeError{Err: fmt.Errorf("%w: %s", ErrAborted, message)}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
