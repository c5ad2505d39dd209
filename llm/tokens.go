package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// TokenState is one trajectory's token state, carried by the caller from
// call to call in Request.Tokens: the ids of the whole sequence so far (the
// last prompt and the last completion exactly as sampled, its end-of-turn
// token included) and how many leading request messages they hold.
//
// With it, a call continues the trajectory in tokens: the past is never
// rendered again, only the messages added since (tool results, a new user
// message) are rendered by the engine and appended, and the engine
// generates from the ids. So turn t+1's prompt is turn t's prompt + turn
// t's completion + the new messages + the generation prompt, whatever the
// chat template would do to the past on a re-render (Qwen3's drops
// earlier reasoning, merges tool results, re-serializes arguments), and
// whatever the caller made of the messages it echoes back: the trajectory
// trains as one sequence, the one the engine sampled. The zero value is a
// trajectory with no call yet. A TokenState is not safe for concurrent use:
// a trajectory makes one call at a time.
type TokenState struct {
	// ids is the sequence so far.
	ids []int32
	// covered counts the leading request messages ids holds, the
	// assistant message of the last call included.
	covered int
	// end is the end-of-turn id the last completion ended on; closed is
	// false when it ended otherwise (a token limit, a stop string), and
	// the next call must then render the whole conversation again.
	end    int32
	closed bool
	// maxModelLen is the model's context as the engine reported it (0:
	// unknown).
	maxModelLen int
	// restarts counts the calls that had to render the conversation
	// again after the first; cuts those of them the context forced.
	restarts, cuts int
}

// Covered is the number of leading request messages the state holds: a
// caller's next request must repeat them (the caller vouches that they are
// the same conversation), and the client renders only those after them.
func (s *TokenState) Covered() int {
	if s == nil {
		return 0
	}
	return s.covered
}

// Len is the number of ids of the sequence so far.
func (s *TokenState) Len() int {
	if s == nil {
		return 0
	}
	return len(s.ids)
}

// Restarts counts the calls after the first that had to render the whole
// conversation again (the previous completion did not end on its
// end-of-turn token, or the caller's messages did not extend the state).
func (s *TokenState) Restarts() int {
	if s == nil {
		return 0
	}
	return s.restarts
}

// ContextCuts counts the calls whose continuation in tokens would not fit
// the model's context, so the conversation was rendered again as the
// template renders it (which drops what Qwen3-style templates drop, the
// reasoning of earlier turns) and its turn starts a new sequence: a caller
// that sees the count grow records a context cut at that turn.
func (s *TokenState) ContextCuts() int {
	if s == nil {
		return 0
	}
	return s.cuts
}

// Reset forgets the trajectory's tokens: the next call starts anew.
func (s *TokenState) Reset() { *s = TokenState{} }

// record makes t, answered for msgs messages, the state's last call.
func (s *TokenState) record(t *Turn, msgs int) {
	s.ids = append(append(s.ids[:0:0], t.PromptIDs...), t.CompletionIDs...)
	s.covered = msgs + 1
	s.closed = false
	n := len(t.CompletionIDs)
	if n == 0 || (t.FinishReason != "stop" && t.FinishReason != "tool_calls") {
		return
	}
	last := t.CompletionIDs[n-1]
	// The engine stopped on an end-of-turn token, which it emitted (vLLM
	// reports no stop reason for EOS; SGLang names the matched id): the
	// template's rendering of the next messages follows it. A stop string
	// leaves the turn open.
	if t.StopReason == "" || t.StopReason == strconv.Itoa(int(last)) {
		s.end, s.closed = last, true
	}
}

// continues reports whether a request of msgs can continue the state.
func (s *TokenState) continues(msgs []openai.ChatCompletionMessage) bool {
	return s.closed && s.covered > 0 && s.covered < len(msgs) && msgs[s.covered].Role != openai.ChatMessageRoleAssistant
}

// Probe messages: the fixed conversation the new messages are rendered
// after, so that the difference is exactly what they add.
const (
	probeUser      = "m"
	probeAssistant = "MARK"
)

// endCounts caches, per end-of-turn id, how many times it occurs in the
// rendering of the probe conversation alone (templates may add a system
// turn of their own): the new messages' ids start after that many.
type endCounts struct {
	mu sync.Mutex
	n  map[int32]int
}

// tokenizePath is the dialect's tokenize route with messages.
func (c *Client) tokenizePath() string {
	if _, ok := c.dialect.(*sglangDialect); ok {
		return "/v1/tokenize"
	}
	return "/tokenize"
}

// tokensSupported reports whether the client can continue trajectories in
// tokens: a token-capturing client of an engine dialect.
func (c *Client) tokensSupported() bool {
	switch c.dialect.(type) {
	case *vllmDialect, *sglangDialect:
		return c.capture
	}
	return false
}

// chatTokens is Chat for a request with Tokens: the first call of a
// trajectory (or one that cannot continue it) renders the conversation on
// the chat route as Chat does; every later one renders only the new
// messages and generates from the ids on the dialect's token route.
func (c *Client) chatTokens(ctx context.Context, req Request) (*Turn, error) {
	st := req.Tokens
	if c.noTokens.Load() || !st.continues(req.Messages) {
		// The first call, one that cannot continue the state, or any
		// call to an engine without a token route: the conversation is
		// rendered again (on the last, Sequences counts the drift the
		// template causes).
		return c.chatRestart(ctx, req)
	}
	added := req.Messages[st.covered:]
	t, err := c.call(ctx, req.Sampling, func(ctx context.Context, s Sampling) (*Turn, *endpoint, int, error) {
		ids, maxLen, te, tn, err := c.renderAdded(ctx, st.end, added, s)
		if err != nil {
			return nil, te, tn, err
		}
		if maxLen > 0 {
			st.maxModelLen = maxLen
		}
		prompt := append(slices.Clip(st.ids), ids...)
		if err := st.fits(len(prompt), s.MaxTokens); err != nil {
			return nil, te, tn, err
		}
		t, e, n, err := c.dialect.complete(ctx, c, CompletionRequest{PromptIDs: prompt, TrajectoryKey: req.TrajectoryKey}, s)
		if t != nil {
			c.parseCompletion(t)
			t.ReusedPromptTokens, t.prevLen = len(st.ids), len(st.ids)
		}
		return t, e, tn + n, err
	})
	if err != nil && routeMissing(err) {
		c.noTokens.Store(true)
		c.log.Warn("llm engine has no token route (tokenize with messages, or a token-id prompt): falling back to re-sending whole conversations; drift is counted",
			"role", c.role, "error", err.Error())
		return c.chatTokens(ctx, req)
	}
	var cut *contextCut
	if errors.As(err, &cut) {
		// The sequence sampled so far (every earlier reasoning block
		// kept) has no room for the turn; the template's own rendering
		// of the conversation may: start a new sequence from it, counted
		// so the caller records the cut. Where that does not fit either,
		// the engine refuses it as over the context.
		st.cuts++
		c.log.Info("llm trajectory outgrew the context in tokens: rendering the conversation again (a context cut)",
			"role", c.role, "error", cut.err.Error())
		return c.chatRestart(ctx, req)
	}
	if err == nil {
		st.record(t, len(req.Messages))
	}
	return t, err
}

// chatRestart renders the whole conversation on the chat route, the
// state's next sequence (its first, or one after a restart).
func (c *Client) chatRestart(ctx context.Context, req Request) (*Turn, error) {
	st := req.Tokens
	if st.covered > 0 && !c.noTokens.Load() {
		st.restarts++
	}
	prev := st.ids
	t, err := c.call(ctx, req.Sampling, func(ctx context.Context, s Sampling) (*Turn, *endpoint, int, error) {
		t, e, n, err := c.dialect.chat(ctx, c, req, s)
		if t != nil && len(prev) > 0 {
			t.prevLen, t.ReusedPromptTokens = len(prev), commonPrefix(prev, t.PromptIDs)
		}
		return t, e, n, err
	})
	if err == nil {
		st.record(t, len(req.Messages))
	}
	return t, err
}

// routeMissing reports whether err says the engine lacks a route of the
// token path (404, 405, 501), as an older or a stripped-down server would.
func routeMissing(err error) bool {
	switch httpretry.Code(err) {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}

// parseCompletion reads a raw completion's text into the assistant message
// as the engine's reasoning and tool parsers would (the role's Parser).
func (c *Client) parseCompletion(t *Turn) {
	p := c.parser.parse(t.Message.Content)
	t.Message, t.ToolCalls, t.ToolCallError = p.Message, p.ToolCalls, p.ToolCallError
	if len(t.ToolCalls) > 0 && t.FinishReason == "stop" {
		t.FinishReason = "tool_calls"
	}
}

// errContextLength is vLLM's wording of a prompt over the context, so that
// Cause classifies the client's own refusal as the server's.
const errContextLength = "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion."

// fits refuses a prompt of n ids with up to maxTokens more over the
// model's context, before the engine is asked: the trajectory outgrew its
// context (the model's failure, as a server's 400 would say).
func (s *TokenState) fits(n, maxTokens int) error {
	if s.maxModelLen <= 0 || n+maxTokens <= s.maxModelLen {
		return nil
	}
	return &contextCut{err: httpretry.NewStatusError(http.StatusBadRequest, nil, fmt.Sprintf(errContextLength, s.maxModelLen, n+maxTokens, n, maxTokens))}
}

// contextCut is fits' refusal: chatTokens cuts the sequence there rather
// than fail the call.
type contextCut struct{ err error }

func (e *contextCut) Error() string { return e.err.Error() }
func (e *contextCut) Unwrap() error { return e.err }

// renderAdded returns the ids the template renders for msgs after an
// assistant turn that ended on end, the generation prompt included: the
// probe conversation with msgs rendered by the engine's tokenize route,
// from the end-of-turn token that closes the probe's assistant turn on.
// The template and tokenizer are the server's own, never a copy.
func (c *Client) renderAdded(ctx context.Context, end int32, msgs []openai.ChatCompletionMessage, s Sampling) ([]int32, int, *endpoint, int, error) {
	skip, maxLen, e, n, err := c.probeEnds(ctx, end, s)
	if err != nil {
		return nil, 0, e, n, err
	}
	probe := append([]openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: probeUser},
		{Role: openai.ChatMessageRoleAssistant, Content: probeAssistant}}, msgs...)
	ids, ml, te, tn, err := c.tokenizeMessages(ctx, probe, s)
	n += tn
	if err != nil {
		return nil, 0, te, n, err
	}
	if ml > 0 {
		maxLen = ml
	}
	at := nthIndex(ids, end, skip)
	if at < 0 || at+1 >= len(ids) {
		return nil, 0, te, n, &DecodeError{Endpoint: displayOf(te), Err: fmt.Errorf("%w: the rendering of %d new messages holds no end-of-turn id %d after the probe's assistant turn", ErrMalformedResponse, len(msgs), end)}
	}
	return ids[at+1:], maxLen, te, n, nil
}

// probeEnds returns how many times end occurs in the probe conversation's
// own rendering (cached per client and id).
func (c *Client) probeEnds(ctx context.Context, end int32, s Sampling) (int, int, *endpoint, int, error) {
	c.ends.mu.Lock()
	n, ok := c.ends.n[end]
	c.ends.mu.Unlock()
	if ok {
		return n, 0, nil, 0, nil
	}
	probe := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: probeUser},
		{Role: openai.ChatMessageRoleAssistant, Content: probeAssistant}}
	ids, maxLen, e, tries, err := c.tokenizeMessages(ctx, probe, s)
	if err != nil {
		return 0, 0, e, tries, err
	}
	for _, id := range ids {
		if id == end {
			n++
		}
	}
	if n == 0 {
		return 0, 0, e, tries, &DecodeError{Endpoint: displayOf(e), Err: fmt.Errorf("%w: the probe conversation's rendering holds no end-of-turn id %d: the template does not close turns with the token the model stops on", ErrMalformedResponse, end)}
	}
	c.ends.mu.Lock()
	if c.ends.n == nil {
		c.ends.n = map[int32]int{}
	}
	c.ends.n[end] = n
	c.ends.mu.Unlock()
	return n, maxLen, e, tries, nil
}

// tokenizeMessages renders msgs with the generation prompt on the
// dialect's tokenize route and returns the ids and the model's context.
func (c *Client) tokenizeMessages(ctx context.Context, msgs []openai.ChatCompletionMessage, s Sampling) ([]int32, int, *endpoint, int, error) {
	body, err := json.Marshal(TokenizeRequest{Model: c.model, Messages: msgs, AddGenerationPrompt: true, ChatTemplateKwargs: s.ChatTemplateKwargs})
	if err != nil {
		return nil, 0, nil, 0, fmt.Errorf("llm role %s: encode tokenize request: %w", c.role, err)
	}
	var tr TokenizeResponse
	decode := func(b []byte, h http.Header) error {
		if err := json.Unmarshal(b, &tr); err != nil {
			return &DecodeError{Err: fmt.Errorf("%w: tokenize: %v", ErrMalformedResponse, err), Snippet: snippet(b)}
		}
		if len(tr.ids()) == 0 {
			return &DecodeError{Err: fmt.Errorf("%w: tokenize returned no ids", ErrMissingTokenIDs), Snippet: snippet(b)}
		}
		return nil
	}
	e, n, err := c.post(ctx, "", nil, c.tokenizePath(), body, decode)
	if err != nil {
		return nil, 0, e, n, err
	}
	return tr.ids(), tr.MaxModelLen, e, n, nil
}

// nthIndex returns the index of the n-th (1-based) occurrence of id in
// ids, or -1.
func nthIndex(ids []int32, id int32, n int) int {
	for i, v := range ids {
		if v == id {
			n--
			if n == 0 {
				return i
			}
		}
	}
	return -1
}

// displayOf is e's display name, "" for none.
func displayOf(e *endpoint) string {
	if e == nil {
		return ""
	}
	return e.display
}
