package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// nested is a JSON schema nested depth objects deep.
func nested(depth int) map[string]any {
	s := map[string]any{"type": "string"}
	for range depth {
		s = map[string]any{"type": "object", "properties": map[string]any{"x": s}}
	}
	return s
}

// TestBoundsRefuseOversizedInput: stop strings, tools and schemas over the
// bounds get 400 naming the field and the bound, and never reach the
// engine.
func TestBoundsRefuseOversizedInput(t *testing.T) {
	g, models := mustGateway(t, rollout.ModeMGRPO, Config{Bounds: Bounds{MaxStop: 4, MaxStopBytes: 16, MaxTools: 2, MaxToolBytes: 4096, MaxSchemaDepth: 8}})
	o, release, done := startHeld(t, g)
	defer func() { close(release); <-done }()
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	tool := func(params any) map[string]any {
		return map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": params}}
	}
	cases := []struct {
		name string
		body map[string]any
		says string
	}{
		{"too many stop strings", map[string]any{"messages": msgs, "stop": []string{"a", "b", "c", "d", "e"}}, "5 stop strings, at most 4"},
		{"a long stop string", map[string]any{"messages": msgs, "stop": strings.Repeat("x", 17)}, "stop[0]: 17 bytes, at most 16"},
		{"too many tools", map[string]any{"messages": msgs, "tools": []any{tool(nil), tool(nil), tool(nil)}}, "3 tools, at most 2"},
		{"a huge tool", map[string]any{"messages": msgs, "tools": []any{tool(map[string]any{"description": strings.Repeat("d", 5000)})}}, "tools[0]: its definition is"},
		{"a deep schema", map[string]any{"messages": msgs, "tools": []any{tool(nested(20))}}, "nests"},
	}
	before := engineCalls(models[RolePlanner])
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, o.BaseURLs[RolePlanner]+"/chat/completions", c.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d %v, want 400", status, body)
			}
			if msg := body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
		})
	}
	if status, body := post(t, o.BaseURLs[RolePlanner]+"/completions", map[string]any{"prompt": "hi", "stop": []string{"1", "2", "3", "4", "5"}}); status != http.StatusBadRequest {
		t.Errorf("completions with too many stop strings: %d %v, want 400", status, body)
	}
	if got := engineCalls(models[RolePlanner]); got != before {
		t.Errorf("%d refused calls reached the engine", got-before)
	}
}

// TestBodyCapByRole: a body over its role's cap (sized from the context) is
// refused with 413 before it is read whole.
func TestBodyCapByRole(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{Bounds: Bounds{MaxBodyBytes: map[string]int64{RoleExecutor: 4096}}})
	o, release, done := startHeld(t, g)
	defer func() { close(release); <-done }()
	big := map[string]any{"messages": []map[string]any{{"role": "user", "content": strings.Repeat("w ", 4000)}}}
	if status, body := post(t, o.BaseURLs[RoleExecutor]+"/chat/completions", big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("an executor body over its cap: %d %v, want 413", status, body)
	}
	if status, body := post(t, o.BaseURLs[RolePlanner]+"/chat/completions", big); status != http.StatusOK {
		t.Errorf("the same body for the uncapped planner: %d %v, want 200", status, body)
	}
}

// TestTurnBudgetsBindGatewayAgents: the run's budgets bound a gateway
// agent's calls as they bound the built-in agents; the call over them is
// refused and recorded as the trajectory's turn-budget failure (a model
// failure, trained with reward 0), never infra.
func TestTurnBudgetsBindGatewayAgents(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{Bounds: Bounds{MaxRolloutTurns: map[string]int{RolePlanner: 1}}})
	var second int
	var secondBody map[string]any
	g.cfg.AgentURL = pushAgent(t, func(w http.ResponseWriter, o offer) {
		msgs := []map[string]any{{"role": "user", "content": o.Task.Question}}
		post(t, o.BaseURLs[RolePlanner]+"/chat/completions", map[string]any{"messages": msgs})
		second, secondBody = post(t, o.BaseURLs[RolePlanner]+"/chat/completions", map[string]any{"messages": append(msgs, map[string]any{"role": "user", "content": "again"})})
		w.Write([]byte(`{"answer":"42"}`))
	})
	task, ft := testTask()
	tree := g.Run(context.Background(), task, ft)
	if second != http.StatusBadRequest || errorCode(t, secondBody) != "turn_budget_exceeded" {
		t.Errorf("the call over the budget: %d %v, want 400 turn_budget_exceeded", second, secondBody)
	}
	p := tree.Planner
	if p.FailureKind != failure.KindModel || p.FailureCause != failure.CauseTurnBudget || p.FormatOK {
		t.Errorf("planner kind %q cause %q format_ok %v, want a model failure turn_budget with its format invalid", p.FailureKind, p.FailureCause, p.FormatOK)
	}
}

// TestCallsInFlightPerRollout: a rollout's calls beyond MaxCallsInFlight
// are refused with 429 and Retry-After; the counts come back as calls end.
func TestCallsInFlightPerRollout(t *testing.T) {
	g, _ := mustGateway(t, rollout.ModeMGRPO, Config{Bounds: Bounds{MaxCallsInFlight: 1}})
	rec := &statusRecorder{header: http.Header{}}
	if !g.enter(rec, "r1") {
		t.Fatal("the first call was refused")
	}
	if g.enter(rec, "r1") || rec.status != http.StatusTooManyRequests || rec.header.Get("Retry-After") == "" {
		t.Errorf("a second call in flight: status %d, want 429 with Retry-After", rec.status)
	}
	if !g.enter(&statusRecorder{header: http.Header{}}, "r2") {
		t.Error("another rollout's call was refused")
	}
	g.leave("r1")
	if !g.enter(&statusRecorder{header: http.Header{}}, "r1") {
		t.Error("a call after the first ended was refused")
	}
}

// TestBodyBudgetQueuesLargeBodies: a body waits for the farm-wide budget
// before its first byte is read, and gives its share back at its end.
func TestBodyBudgetQueuesLargeBodies(t *testing.T) {
	budget := semaphore.NewWeighted(100)
	first := &budgetedBody{ReadCloser: io.NopCloser(strings.NewReader("aaaa")), ctx: context.Background(), budget: budget, n: 80}
	buf := make([]byte, 2)
	if _, err := first.Read(buf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	second := &budgetedBody{ReadCloser: io.NopCloser(strings.NewReader("bbbb")), ctx: ctx, budget: budget, n: 80}
	if _, err := second.Read(buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second body while the first holds the budget read with %v, want it to wait (cancelled here)", err)
	}
	if _, err := io.ReadAll(first); err != nil {
		t.Fatal(err)
	}
	if !budget.TryAcquire(100) {
		t.Error("the first body did not give its share back at its end")
	}
}

// statusRecorder records an answer's status and headers.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int)      { r.status = status }
