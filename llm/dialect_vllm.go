package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"
)

// vLLM capture modes, detected on the first call.
const (
	vllmUnknown int32 = iota
	vllmModern        // ≥ 0.10.2: return_token_ids
	vllmLegacy        // older: "token_id:N" logprob tokens and /tokenize
)

// vllmDialect talks to vLLM's OpenAI-compatible server. Servers from 0.10.2
// return prompt_token_ids and choices[].token_ids when asked with
// return_token_ids. Older servers ignore that field; for them the client
// asks return_tokens_as_token_ids, reads each completion id from its
// logprob token "token_id:N", and gets the prompt ids from /tokenize with
// the same messages. The mode is detected on the first call and logged.
type vllmDialect struct {
	mode atomic.Int32
}

func (d *vllmDialect) chat(ctx context.Context, c *Client, req Request, s Sampling) (*Turn, *endpoint, int, error) {
	total := 0
	// aborted is the partial turn of the last attempt the server aborted.
	var aborted *Turn
	for {
		mode := d.mode.Load()
		// A legacy server streams no token ids: its calls stay unstreamed.
		streamed := c.stream.Load() && mode != vllmLegacy
		cr := c.chatRequest(req, s)
		zero := 0
		cr.LogProbs, cr.TopLogProbs = true, &zero
		cr.ReturnTokenIDs = true
		// max_tokens is deprecated in vLLM's chat request (a warning per
		// request); max_completion_tokens is its current name.
		cr.MaxCompletionTokens, cr.MaxTokens = cr.MaxTokens, 0
		cr.ReturnTokensAsTokenIDs = mode == vllmLegacy
		if streamed {
			cr.Stream = true
			cr.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}
		body, err := encodeChatRequestPrefix(cr, &c.tools, req.Prefix)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("llm role %s: encode request: %w", c.role, err)
		}
		var (
			turn      *Turn
			noIDsSeen bool
		)
		// keepPartial keeps what an aborted or cut attempt generated, in
		// case no later attempt finishes. (A legacy server's prompt ids
		// would need a /tokenize call.)
		keepPartial := func(r *chatResult, h http.Header, by, reason string) {
			if r == nil || mode == vllmLegacy {
				return
			}
			t := baseTurn(r.resp, r.ch, h)
			t.PromptIDs, t.CompletionIDs, t.Logprobs = r.resp.PromptTokenIDs, r.ch.TokenIDs, r.logprobs
			p := partialTurn(t, reason)
			if p != nil && by == AbortedByClient {
				p.Abort.By = by
			}
			if p != nil {
				aborted = p
			}
		}
		judge := func(r *chatResult, err error, h http.Header) error {
			if err != nil {
				switch {
				case errors.Is(err, ErrAborted):
					keepPartial(r, h, AbortedByServer, "")
				case isStreamEnded(err):
					keepPartial(r, h, AbortedByClient, ErrStreamEnded.Error())
				}
				return err
			}
			t := baseTurn(r.resp, r.ch, h)
			t.PromptIDs, t.CompletionIDs = r.resp.PromptTokenIDs, r.ch.TokenIDs
			t.Logprobs = r.logprobs
			noIDs := len(t.PromptIDs) == 0 && len(t.CompletionIDs) == 0
			switch {
			case noIDs && (mode == vllmUnknown || streamed):
				// Possibly an old server, or one that streams no ids:
				// decided after the call.
				noIDsSeen = true
				turn = t
				return nil
			case mode == vllmLegacy:
				ids, err := idsFromLogprobTokens(r.tokens)
				if err != nil {
					return err
				}
				t.CompletionIDs = ids
				// Prompt ids come from /tokenize; check the rest now.
				if len(t.Logprobs) != len(t.CompletionIDs) || len(ids) == 0 {
					return &DecodeError{Err: fmt.Errorf("%w: %d logprobs for %d completion ids", ErrLogprobMismatch, len(t.Logprobs), len(ids))}
				}
				turn = t
				return nil
			}
			if err := checkTokens(t); err != nil {
				return err
			}
			req.Prefix.rememberTurn(r.promptText, t)
			turn = t
			return nil
		}
		var (
			e *endpoint
			n int
		)
		if streamed {
			decode := func(b []byte, h http.Header) error {
				r, err := decodeVLLMStream(b, false, c.met)
				return judge(r, err, h)
			}
			cut := func(b []byte, h http.Header, reason string) {
				r, _ := decodeVLLMStream(b, false, c.met)
				keepPartial(r, h, AbortedByClient, reason)
			}
			e, n, err = c.postStream(ctx, req.TrajectoryKey, nil, "/v1/chat/completions", body, decode, cut)
		} else {
			decode := func(b []byte, h http.Header) error {
				r, err := decodeChatPrefix(b, mode == vllmLegacy, req.Prefix, c.met)
				return judge(r, err, h)
			}
			e, n, err = c.post(ctx, req.TrajectoryKey, nil, "/v1/chat/completions", body, decode)
		}
		total += n
		if err != nil {
			setAttempts(err, total)
			return aborted, e, total, err
		}
		if noIDsSeen && streamed {
			if c.stream.CompareAndSwap(true, false) {
				c.log.Warn("vllm server streams no token ids (return_token_ids needs vLLM ≥ 0.10.2): calling it unstreamed from now on",
					"role", c.role, "endpoint", e.display)
			}
			continue
		}
		if noIDsSeen {
			if d.mode.CompareAndSwap(vllmUnknown, vllmLegacy) {
				c.log.Warn("vllm server returned no token ids: assuming vLLM older than 0.10.2, reading ids from logprob tokens and /tokenize",
					"role", c.role, "endpoint", e.display)
			}
			continue
		}
		if mode == vllmUnknown && d.mode.CompareAndSwap(vllmUnknown, vllmModern) {
			c.log.Info("vllm server returns token ids (vLLM ≥ 0.10.2)", "role", c.role, "endpoint", e.display)
		}
		if mode == vllmLegacy {
			ids, te, tn, err := c.tokenize(ctx, req, s, e, "/tokenize")
			total += tn
			if err != nil {
				return nil, te, total, err
			}
			if turn.Usage.PromptTokens > 0 && turn.Usage.PromptTokens != len(ids) {
				return nil, te, total, &GiveUpError{Endpoint: te.display, Status: 200, Attempts: total,
					Err: &DecodeError{Endpoint: te.display, Err: fmt.Errorf("%w: /tokenize gave %d prompt ids, the completion counted %d", ErrMissingTokenIDs, len(ids), turn.Usage.PromptTokens)}}
			}
			turn.PromptIDs = ids
		}
		return turn, e, total, nil
	}
}

// idsFromLogprobTokens reads completion ids from the tokens of logprob
// entries written as
// "token_id:N" (vLLM's return_tokens_as_token_ids).
func idsFromLogprobTokens(tokens []string) ([]int32, error) {
	ids := make([]int32, len(tokens))
	for i, tok := range tokens {
		s, ok := strings.CutPrefix(tok, "token_id:")
		if !ok {
			return nil, &DecodeError{Err: fmt.Errorf("%w: logprob token %d is %q, not token_id:N", ErrMissingTokenIDs, i, tok)}
		}
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil || id < 0 {
			return nil, &DecodeError{Err: fmt.Errorf("%w: logprob token %d is %q, not token_id:N", ErrMissingTokenIDs, i, tok)}
		}
		ids[i] = int32(id)
	}
	return ids, nil
}

// tokenize asks the server for the prompt ids of req's messages with the
// generation prompt, pinned to endpoint e while it is in rotation.
func (c *Client) tokenize(ctx context.Context, req Request, s Sampling, e *endpoint, path string) ([]int32, *endpoint, int, error) {
	body, err := json.Marshal(TokenizeRequest{
		Model: c.model, Messages: req.Messages, Tools: req.Tools,
		AddGenerationPrompt: true, ChatTemplateKwargs: s.ChatTemplateKwargs,
	})
	if err != nil {
		return nil, e, 0, fmt.Errorf("llm role %s: encode tokenize request: %w", c.role, err)
	}
	return c.tokenizeBody(ctx, req.TrajectoryKey, body, e, path)
}

// tokenizeBody posts a tokenize request body to path, pinned to endpoint e
// while it is in rotation, and returns the ids of its answer.
func (c *Client) tokenizeBody(ctx context.Context, key string, body []byte, e *endpoint, path string) ([]int32, *endpoint, int, error) {
	var ids []int32
	decode := func(b []byte, h http.Header) error {
		var tr TokenizeResponse
		if err := json.Unmarshal(b, &tr); err != nil {
			return &DecodeError{Err: fmt.Errorf("%w: tokenize: %v", ErrMalformedResponse, err), Snippet: snippet(b)}
		}
		ids = tr.ids()
		if len(ids) == 0 {
			return &DecodeError{Err: fmt.Errorf("%w: tokenize returned no ids", ErrMissingTokenIDs), Snippet: snippet(b)}
		}
		return nil
	}
	te, n, err := c.post(ctx, key, e, path, body, decode)
	return ids, te, n, err
}
