package agents

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/llm"
)

// TestTrajectoryFailureClasses checks the class a trajectory records for
// each way a model call ends it: an engine that gave up is infra with its
// endpoint; a context-length refusal and the rollout's own wall-clock
// limit are the model's; a generation the server aborted is infra.
func TestTrajectoryFailureClasses(t *testing.T) {
	giveUp := func(err error) error {
		return &llm.GiveUpError{Endpoint: "http://gpu-1:8000", Status: httpretry.Code(err), Attempts: 6, Err: err}
	}
	cases := []struct {
		name      string
		respond   func(ctx context.Context) (*llm.Turn, error)
		wallClock time.Duration
		kind      failure.Kind
		cause     failure.Cause
		endpoint  string
	}{
		{"refused", func(context.Context) (*llm.Turn, error) {
			return nil, giveUp(fmt.Errorf("dial tcp: connection refused"))
		}, 0, failure.KindInfra, failure.CauseEngineUnreachable, "http://gpu-1:8000"},
		{"503", func(context.Context) (*llm.Turn, error) {
			return nil, giveUp(httpretry.NewStatusError(503, nil, "overloaded"))
		}, 0, failure.KindInfra, failure.CauseEngine5xx, "http://gpu-1:8000"},
		{"context length", func(context.Context) (*llm.Turn, error) {
			return nil, giveUp(httpretry.NewStatusError(400, nil, "This model's maximum context length is 32768 tokens."))
		}, 0, failure.KindModel, failure.CauseContextLength, ""},
		{"abort", func(context.Context) (*llm.Turn, error) {
			return abortedTurn("partial"), nil
		}, 0, failure.KindInfra, failure.CauseServerAbort, ""},
		{"wall clock", func(ctx context.Context) (*llm.Turn, error) {
			<-ctx.Done()
			return nil, giveUp(ctx.Err())
		}, 20 * time.Millisecond, failure.KindModel, failure.CauseWallClock, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &ctxModel{respond: c.respond}
			rb := DefaultRolloutBudget()
			rb.WallClock = c.wallClock
			p := mustPlanner(t, m, mustExecutor(t, m, &fakeToolbox{}, DefaultExecutorBudget()), rb)
			r := p.Run(context.Background(), Query{Key: "q", Question: "?"})
			tr := r.Planner
			if tr.Error == "" || tr.FailureKind != c.kind || tr.FailureCause != c.cause || tr.FailureEndpoint != c.endpoint {
				t.Errorf("error %q, kind %q, cause %q, endpoint %q; want %q, %q, %q", tr.Error, tr.FailureKind, tr.FailureCause, tr.FailureEndpoint, c.kind, c.cause, c.endpoint)
			}
			if tr.FailureTurn == nil || *tr.FailureTurn != 0 {
				t.Errorf("failure turn %v, want 0 (the first call failed)", tr.FailureTurn)
			}
		})
	}
}

// ctxModel answers every call with respond, given the call's context.
type ctxModel struct {
	respond func(ctx context.Context) (*llm.Turn, error)
}

func (m *ctxModel) Chat(ctx context.Context, _ llm.Request) (*llm.Turn, error) { return m.respond(ctx) }

// TestFailureTurnIsTheFailingCall checks that a trajectory records the
// index of the turn whose call failed (the N of its error's "turn N:"),
// and none without a failure.
func TestFailureTurnIsTheFailingCall(t *testing.T) {
	m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
		if n := toolMessages(req); n < 2 {
			return callTurn(`search:{"query":["a"]}`), nil
		}
		return nil, &llm.GiveUpError{Endpoint: "http://gpu-1:8000", Status: 503, Attempts: 6, Err: httpretry.NewStatusError(503, nil, "overloaded")}
	}}
	e := mustExecutor(t, m, &fakeToolbox{}, DefaultExecutorBudget())
	traj := e.Run(context.Background(), "Find X.", "r/executor/0", 7, 0)
	if traj.FailureKind != failure.KindInfra || traj.FailureTurn == nil || *traj.FailureTurn != 2 || !strings.HasPrefix(traj.Error, "turn 2:") {
		t.Errorf("kind %q, turn %v, error %q; want infra on turn 2", traj.FailureKind, traj.FailureTurn, traj.Error)
	}
	ok := &scriptModel{respond: func(llm.Request) (*llm.Turn, error) { return textTurn("report"), nil }}
	if tr := mustExecutor(t, ok, &fakeToolbox{}, DefaultExecutorBudget()).Run(context.Background(), "Find X.", "r/executor/0", 7, 0); tr.FailureTurn != nil {
		t.Errorf("a trajectory without a failure records failure turn %d", *tr.FailureTurn)
	}
}
