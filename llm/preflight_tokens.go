package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// Route names of the paths a role's calls take, as TokenRoute reports
// them.
const (
	// RouteMessages: every call sends the whole conversation to the chat
	// route, which the engine renders again (drift counted).
	RouteMessages = "messages"
)

// PreflightTokens finds, before a run starts, whether the engine serves
// the token path a client continuing trajectories in tokens uses (its
// tokenize route with messages, and a token-id prompt on the completion
// route), by rendering a fixed conversation and generating one token from
// its ids. An engine without them is said at warning level, and the client
// re-sends whole conversations from then on; the run's drift count shows
// what that costs. It returns an error only for a failure that is not a
// missing or refused route, and nil without a call for a client that
// does not capture tokens.
func (c *Client) PreflightTokens(ctx context.Context) error {
	if !c.tokensSupported() {
		return nil
	}
	if c.noTokens.Load() {
		c.logRoute()
		return nil
	}
	_, err := c.call(ctx, probeCall.Sampling, func(ctx context.Context, s Sampling) (*Turn, *endpoint, int, error) {
		ids, _, te, tn, err := c.tokenizeMessages(ctx, probeCall.Messages, s)
		if err != nil {
			return nil, te, tn, err
		}
		t, e, n, err := c.dialect.complete(ctx, c, CompletionRequest{PromptIDs: ids}, s)
		return t, e, tn + n, err
	})
	switch {
	case err == nil:
	case routeMissing(err) || httpretry.Code(err) == http.StatusBadRequest:
		// 400: the server refuses token-id prompts (a text-only
		// completion route).
		c.noTokens.Store(true)
		c.log.Warn("llm engine has no token route: every call re-sends the whole conversation (the messages path); expect drift where the chat template is not append-only",
			"role", c.role, "error", err.Error())
		return nil
	case errors.Is(err, context.Canceled):
		return err
	default:
		return fmt.Errorf("%s token path probe (tokenize %s, then a token-id completion): %w", c.role, c.tokenizePath(), err)
	}
	c.logRoute()
	return nil
}

// TokenRoute names the routes the client's trajectory calls take: the
// token path's (render, generate, parse) or RouteMessages.
func (c *Client) TokenRoute() string {
	if !c.tokensSupported() || c.noTokens.Load() {
		return RouteMessages
	}
	gen := "/v1/completions (token-id prompt)"
	if _, ok := c.dialect.(*sglangDialect); ok {
		gen = "/generate (input_ids)"
	}
	return fmt.Sprintf("tokens: render %s, generate %s, parse %s (client)", c.tokenizePath(), gen, c.parser)
}

// logRoute says at start which path the role's calls take.
func (c *Client) logRoute() {
	route := c.TokenRoute()
	if route == RouteMessages {
		c.log.Warn("llm calls take the messages path: whole conversations re-sent, re-rendered by the engine, drift counted", "role", c.role)
		return
	}
	c.log.Info("llm calls continue trajectories in tokens", "role", c.role, "route", route)
}
