package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/sync/semaphore"

	"github.com/mgrpo/mgrpo/rollout"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// Bounds are what the gateway takes from one agent. Every agent request is
// checked against them before anything is forwarded, so a careless or
// hostile agent cannot make the farm hold unbounded memory, send the engine
// unbounded work, or keep a rollout going past the run's budgets. A request
// over a bound is answered in the API's error shape and, where it belongs to
// a trajectory, recorded as that trajectory's own failure (never infra).
type Bounds struct {
	// MaxStop and MaxStopBytes bound the stop strings of a call: how many,
	// and the bytes of each.
	MaxStop, MaxStopBytes int
	// MaxTools bounds a call's tools; MaxToolBytes the JSON of each tool's
	// definition; MaxSchemaDepth the nesting of its parameters' schema.
	MaxTools, MaxToolBytes, MaxSchemaDepth int
	// MaxBodyBytes caps a request body by role (a prompt the role's
	// context could hold is far smaller); 0 leaves it to the server's cap.
	MaxBodyBytes map[string]int64
	// MaxCallsInFlight bounds the calls of one rollout in flight at once
	// (0: unbounded).
	MaxCallsInFlight int
	// MaxTurns bounds the model calls of one trajectory by role, and
	// MaxRolloutTurns those of one rollout by role (0: unbounded): the
	// run's budgets, as they bound the built-in agents.
	MaxTurns, MaxRolloutTurns map[string]int
	// BodyBudget bounds the request bytes being read at once, over every
	// rollout: concurrent large bodies wait for each other instead of
	// growing the farm's memory without bound (0: unbounded).
	BodyBudget int64
}

// Defaults of Bounds.
const (
	DefaultMaxStop        = 32
	DefaultMaxStopBytes   = 512
	DefaultMaxTools       = 128
	DefaultMaxToolBytes   = 64 << 10
	DefaultMaxSchemaDepth = 32
	// DefaultMaxCallsInFlight is far above a planner's parallel
	// sub-agents.
	DefaultMaxCallsInFlight = 64
	// DefaultBodyBudget is the request bytes being read at once.
	DefaultBodyBudget = 256 << 20
	// BytesPerContextToken sizes a role's body cap from its context
	// length: generous (a token of English is about 4 bytes), so no prompt
	// the context can hold is refused for its bytes.
	BytesPerContextToken = 32
	// bodySlack is added to every body cap: tools, JSON syntax, headers
	// of the messages.
	bodySlack = 1 << 20
)

// DefaultBounds returns the bounds with their defaults and no per-role caps.
func DefaultBounds() Bounds {
	return Bounds{MaxStop: DefaultMaxStop, MaxStopBytes: DefaultMaxStopBytes, MaxTools: DefaultMaxTools,
		MaxToolBytes: DefaultMaxToolBytes, MaxSchemaDepth: DefaultMaxSchemaDepth,
		MaxCallsInFlight: DefaultMaxCallsInFlight, BodyBudget: DefaultBodyBudget}
}

// withDefaults fills b's zero limits with DefaultBounds' values.
func (b Bounds) withDefaults() Bounds {
	d := DefaultBounds()
	for _, f := range []struct {
		v *int
		d int
	}{{&b.MaxStop, d.MaxStop}, {&b.MaxStopBytes, d.MaxStopBytes},
		{&b.MaxTools, d.MaxTools}, {&b.MaxToolBytes, d.MaxToolBytes}, {&b.MaxSchemaDepth, d.MaxSchemaDepth},
		{&b.MaxCallsInFlight, d.MaxCallsInFlight}} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	if b.BodyBudget == 0 {
		b.BodyBudget = d.BodyBudget
	}
	return b
}

// BodyCapForContext is the body cap of a role whose context holds tokens.
func BodyCapForContext(tokens int) int64 {
	if tokens <= 0 {
		return 0
	}
	return int64(tokens)*BytesPerContextToken + bodySlack
}

// checkStop refuses stop strings over the bounds.
func (b Bounds) checkStop(stop []string) error {
	if b.MaxStop > 0 && len(stop) > b.MaxStop {
		return refuse("invalid_request_error", "stop: %d stop strings, at most %d are taken", len(stop), b.MaxStop)
	}
	for i, s := range stop {
		if b.MaxStopBytes > 0 && len(s) > b.MaxStopBytes {
			return refuse("invalid_request_error", "stop[%d]: %d bytes, at most %d are taken", i, len(s), b.MaxStopBytes)
		}
	}
	return nil
}

// checkTools refuses tool lists over the bounds: too many tools, a tool's
// definition too large, a schema nested too deep.
func (b Bounds) checkTools(tools []openai.Tool) error {
	if b.MaxTools > 0 && len(tools) > b.MaxTools {
		return refuse("invalid_request_error", "tools: %d tools, at most %d are taken", len(tools), b.MaxTools)
	}
	for i, t := range tools {
		data, err := json.Marshal(t)
		if err != nil {
			return refuse("invalid_request_error", "tools[%d]: %v", i, err)
		}
		if b.MaxToolBytes > 0 && len(data) > b.MaxToolBytes {
			return refuse("invalid_request_error", "tools[%d]: its definition is %d bytes, at most %d are taken", i, len(data), b.MaxToolBytes)
		}
		if b.MaxSchemaDepth > 0 {
			if d := jsonDepth(data); d > b.MaxSchemaDepth+3 { // tool → function → parameters
				return refuse("invalid_request_error", "tools[%d]: its schema nests %d levels, at most %d are taken", i, d-3, b.MaxSchemaDepth)
			}
		}
	}
	return nil
}

// jsonDepth is the deepest nesting of objects and arrays in valid JSON
// data, strings skipped.
func jsonDepth(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// checkCall applies the per-call bounds to a call of any API.
func (b Bounds) checkCall(c call) error {
	if err := b.checkStop(c.sampling.Stop); err != nil {
		return err
	}
	return b.checkTools(c.tools)
}

// checkTurns refuses a call of a trajectory (that has made turns calls) or
// a rollout (whose role has made rolloutTurns) over the run's budgets. The
// refusal is the trajectory's turn-budget failure, as for a built-in agent.
func (b Bounds) checkTurns(role string, turns, rolloutTurns int) error {
	if n := b.MaxTurns[role]; n > 0 && turns >= n {
		return refuseAs(failure.CauseTurnBudget, "turn_budget_exceeded", "the %s trajectory has made its %d model calls (the run's budget)", role, n)
	}
	if n := b.MaxRolloutTurns[role]; n > 0 && rolloutTurns >= n {
		return refuseAs(failure.CauseTurnBudget, "turn_budget_exceeded", "the rollout has made its %d %s model calls (the run's budget)", n, role)
	}
	return nil
}

// rolloutCalls counts a rollout's calls: in flight now, and made per role.
type rolloutCalls struct {
	inFlight int
	made     map[string]int
}

// enter counts a call of rollout id's role in, or refuses it (429) when
// the rollout already has MaxCallsInFlight calls in flight; leave counts it
// out.
func (g *Gateway) enter(w http.ResponseWriter, id string) bool {
	g.mu.Lock()
	c := g.calls[id]
	if c == nil {
		c = &rolloutCalls{made: map[string]int{}}
		g.calls[id] = c
	}
	over := g.cfg.Bounds.MaxCallsInFlight > 0 && c.inFlight >= g.cfg.Bounds.MaxCallsInFlight
	if !over {
		c.inFlight++
	}
	g.mu.Unlock()
	if over {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "too_many_concurrent_calls",
			fmt.Sprintf("rollout %s has %d model calls in flight, the most the gateway takes at once; wait for one to finish", id, g.cfg.Bounds.MaxCallsInFlight))
	}
	return !over
}

func (g *Gateway) leave(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.calls[id]; c != nil {
		c.inFlight--
	}
}

// countTurn counts a call of rollout id's role that is about to be made,
// returning how many were made before it.
func (g *Gateway) countTurn(id, role string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.calls[id]
	if c == nil {
		c = &rolloutCalls{made: map[string]int{}}
		g.calls[id] = c
	}
	n := c.made[role]
	c.made[role]++
	return n
}

// forgetCalls drops rollout id's counts once it has ended.
func (g *Gateway) forgetCalls(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.calls, id)
}

// bound wraps a request's body with its role's cap and the farm-wide body
// budget: the body's bytes are taken from the budget on its first read and
// given back once it has been read to its end (or closed).
func (g *Gateway) bound(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	limit := int64(0)
	if role := roleOfPath(r.URL.Path); role != "" {
		limit = g.cfg.Bounds.MaxBodyBytes[role]
	}
	if limit > 0 {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	if g.budget == nil {
		return
	}
	n := r.ContentLength
	if n <= 0 || (limit > 0 && n > limit) {
		n = limit
	}
	if n <= 0 || n > g.cfg.Bounds.BodyBudget {
		n = g.cfg.Bounds.BodyBudget
	}
	r.Body = &budgetedBody{ReadCloser: r.Body, ctx: r.Context(), budget: g.budget, n: n}
}

// roleOfPath is the role of a role route's path (/r/HANDLE/ROLE/v1/…), or
// "".
func roleOfPath(path string) string {
	rest, ok := strings.CutPrefix(path, "/r/")
	if !ok {
		return ""
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// budgetedBody holds n bytes of the body budget from its first read until
// it has been read to its end or closed.
type budgetedBody struct {
	io.ReadCloser
	ctx          context.Context
	budget       *semaphore.Weighted
	n            int64
	taken, given bool
	waitErr      error
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	if b.waitErr != nil {
		return 0, b.waitErr
	}
	if !b.taken {
		if err := b.budget.Acquire(b.ctx, b.n); err != nil {
			b.waitErr = fmt.Errorf("wait for the body budget: %w", err)
			return 0, b.waitErr
		}
		b.taken = true
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.give()
	}
	return n, err
}

func (b *budgetedBody) Close() error {
	b.give()
	return b.ReadCloser.Close()
}

func (b *budgetedBody) give() {
	if b.taken && !b.given {
		b.given = true
		b.budget.Release(b.n)
	}
}

// BudgetBounds are a run's agent budgets as the gateway applies them to
// its agents: plannerTurns the planner's (the single agent's) calls per
// rollout, executorTurns each executor trajectory's calls, delegations ×
// executorTurns the executors' calls per rollout, and each role's body
// cap sized from contextTokens; the other bounds are the defaults.
func BudgetBounds(plannerTurns, executorTurns, delegations, contextTokens int, mode rollout.Mode) Bounds {
	bounds := DefaultBounds()
	main := RolePlanner
	if mode == rollout.ModeSingle {
		main = RoleAgent
	}
	bounds.MaxTurns = map[string]int{RoleExecutor: executorTurns}
	bounds.MaxRolloutTurns = map[string]int{main: plannerTurns, RoleExecutor: delegations * executorTurns}
	cap := BodyCapForContext(contextTokens)
	bounds.MaxBodyBytes = map[string]int64{main: cap, RoleExecutor: cap}
	return bounds
}
