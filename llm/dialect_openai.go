package llm

import (
	"context"
	"fmt"
	"net/http"
)

// openaiDialect talks to any OpenAI-compatible API without token capture:
// judges, summarizers, hosted models under evaluation. Its turns carry the
// message, finish reason and usage, but no token ids or logprobs; a client
// configured with CaptureTokens refuses this dialect (ErrTokensUnsupported)
// and Sequences refuses its turns (ErrNoTokenData).
type openaiDialect struct{}

func (openaiDialect) chat(ctx context.Context, c *Client, req Request, s Sampling) (*Turn, *endpoint, int, error) {
	cr := c.chatRequest(req, s)
	// Hosted APIs reject top_k, min_p and repetition_penalty; they are
	// dropped rather than sent.
	cr.TopK, cr.MinP, cr.RepetitionPenalty = nil, nil, nil
	body, err := encodeChatRequestPrefix(cr, &c.tools, req.Prefix)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("llm role %s: encode request: %w", c.role, err)
	}
	var turn *Turn
	decode := func(b []byte, h http.Header) error {
		r, err := decodeChat(b, false, c.met)
		if err != nil {
			return err
		}
		turn = baseTurn(r.resp, r.ch, h)
		return nil
	}
	e, n, err := c.post(ctx, req.TrajectoryKey, nil, "/v1/chat/completions", body, decode)
	return turn, e, n, err
}
