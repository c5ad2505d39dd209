package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultPreflightTimeout bounds each endpoint's health check in Preflight
// when the context has no earlier deadline.
const DefaultPreflightTimeout = 5 * time.Second

// Preflight asks every endpoint of the pool for GET /health once, with the
// probe the pool uses to re-admit ejected endpoints, so that an unreachable
// or unhealthy server is reported before a run starts instead of as the
// failures of its first rollouts. It returns nil when all answer 200, and
// otherwise one error per failing endpoint, each naming the role and the
// endpoint (credentials redacted) and saying what went wrong. Hosted
// OpenAI-style APIs have no /health: do not preflight their pools.
func (p *Pool) Preflight(ctx context.Context) error {
	var errs []error
	for _, e := range p.eps {
		ectx, cancel := context.WithTimeout(ctx, DefaultPreflightTimeout)
		err := p.probeHealth(ectx, e)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s endpoint %s: %w", p.role, e.display, err))
		}
	}
	return errors.Join(errs...)
}

// probeHealth performs one GET /health on e and says why it failed: the
// transport's error (without the URL, which *url.Error repeats with any
// credentials) or the status of an answer other than 200.
func (p *Pool) probeHealth(ctx context.Context, e *endpoint) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath("health").String(), nil)
	if err != nil {
		return err
	}
	resp, err := p.probe.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("unreachable: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/health answered %s", resp.Status)
	}
	return nil
}

// streamProbe is the conversation PreflightStream sends: one short user
// message, answered with one token.
var streamProbe = Request{
	Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Say OK."}},
	Sampling: &Sampling{MaxTokens: 1},
}

// PreflightStream checks, for a client configured with Config.Stream, that
// its servers stream what a Turn needs, by one streamed call of a single
// token before a run starts. A server whose stream has no token ids (vLLM
// older than 0.10.2 ignores return_token_ids) is logged at warning level
// and the client calls unstreamed from then on, so the run says at start
// that it is not streaming instead of finding out on its first rollout.
// SGLang streams on /generate, whose events always carry the output ids
// and logprobs. It returns the probe's error when the call fails, and nil
// without a call for a client that does not stream.
func (c *Client) PreflightStream(ctx context.Context) error {
	if !c.stream.Load() {
		return nil
	}
	if _, err := c.Chat(ctx, streamProbe); err != nil {
		return fmt.Errorf("%s streamed probe call: %w", c.role, err)
	}
	if c.stream.Load() {
		c.log.Info("streaming chat completions with token ids", "role", c.role)
	}
	return nil
}

// Streaming reports whether the client streams its calls: Config.Stream,
// unless a server showed that it cannot stream token ids.
func (c *Client) Streaming() bool { return c.stream.Load() }

// PreflightAll checks every client's endpoints (Pool.Preflight), and that
// a streaming client's servers stream token ids (PreflightStream), which
// route continues its trajectories (PreflightTokens), saying every problem
// at once. The clients are checked side by side (each check may wait for
// a generation), their problems said in the clients' order.
func PreflightAll(ctx context.Context, clients []*Client) error {
	found := make([][]string, len(clients))
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() { found[i] = cl.preflightProblems(ctx) })
	}
	wg.Wait()
	if problems := slices.Concat(found...); len(problems) > 0 {
		return fmt.Errorf("before starting:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// preflightProblems is one client's part of PreflightAll.
func (cl *Client) preflightProblems(ctx context.Context) []string {
	if err := cl.Pool().Preflight(ctx); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	// A streaming role's servers must stream token ids; one that does
	// not is said now and called unstreamed.
	if err := cl.PreflightStream(ctx); err != nil {
		problems = append(problems, err.Error())
	}
	// The token path's routes, or the messages path, said now.
	if err := cl.PreflightTokens(ctx); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}
