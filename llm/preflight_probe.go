package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// ErrModelNotServed means an endpoint's GET /v1/models does not list the
// client's model.
var ErrModelNotServed = errors.New("model not served")

// ModelError says which model an endpoint does not serve and which it does.
type ModelError struct {
	// Endpoint is the base URL, credentials redacted.
	Endpoint string
	// Model is the model the client asks for; Served what the endpoint
	// lists.
	Model  string
	Served []string
}

// Error implements error.
func (e *ModelError) Error() string {
	return fmt.Sprintf("%s does not serve model %q; it serves %s", e.Endpoint, e.Model, quoteList(e.Served))
}

// Unwrap makes errors.Is(err, ErrModelNotServed) hold.
func (e *ModelError) Unwrap() error { return ErrModelNotServed }

// quoteList writes names as "a", "b" (or "nothing").
func quoteList(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// PreflightModel asks every endpoint for GET /v1/models (with the client's
// key) and returns a *ModelError for the first that answers with a list
// not holding the client's model, so a mistyped model name stops a run
// before its first rollout instead of failing every call. An endpoint that
// does not answer the route (an older server, a proxy) is not held against
// the client: the probe call (PreflightCall) still checks it.
func (c *Client) PreflightModel(ctx context.Context) error {
	for _, e := range c.pool.eps {
		ectx, cancel := context.WithTimeout(ctx, DefaultPreflightTimeout)
		served, ok := c.servedModels(ectx, e)
		cancel()
		if ok && !slices.Contains(served, c.model) {
			return &ModelError{Endpoint: e.display, Model: c.model, Served: served}
		}
	}
	return nil
}

// servedModels returns the ids GET /v1/models lists on e; ok is false when
// the route did not answer a list.
func (c *Client) servedModels(ctx context.Context, e *endpoint) (ids []string, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath("v1", "models").String(), nil)
	if err != nil {
		return nil, false
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.pool.probe.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil || list.Data == nil {
		return nil, false
	}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, true
}

// probeCall is the conversation PreflightCall sends: one short user
// message, answered with one token.
var probeCall = Request{
	Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Say OK."}},
	Sampling: &Sampling{MaxTokens: 1},
}

// PreflightCall makes one call of a single token through the client's
// dialect, capturing tokens when the client does, so that a server of
// another family than the dialect (an SGLang server called as vLLM, or the
// reverse) or one that returns no token ids is found before a run starts.
// It returns the call's error (wrapping ErrMissingTokenIDs when the
// answer had no token ids), nil when the call gave a usable turn.
func (c *Client) PreflightCall(ctx context.Context) error {
	turn, err := c.Chat(ctx, probeCall)
	if err != nil {
		return err
	}
	if c.capture && (len(turn.PromptIDs) == 0 || len(turn.CompletionIDs) == 0) {
		return fmt.Errorf("%s: %w", turn.Endpoint, ErrMissingTokenIDs)
	}
	return nil
}

// DialectHint says which dialect a failed probe call (PreflightCall)
// suggests, for the error a run reports; "" when it suggests none.
func DialectHint(dialect string, err error) string {
	var se *httpretry.StatusError
	notFound := errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusMethodNotAllowed)
	switch {
	case dialect == DialectSGLang && notFound:
		return " (the server has no SGLang /generate route: a vLLM server is called with --dialect vllm)"
	case dialect == DialectVLLM && (notFound || errors.Is(err, ErrMissingTokenIDs)):
		return " (the server did not answer vLLM's chat route with token ids: an SGLang server is called with --dialect sglang; vLLM needs version 0.10.2 or later)"
	}
	return ""
}
