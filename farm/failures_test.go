package farm

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools"
)

// errScorer fails every answer it is asked to score: a judge that did not
// answer after its retries.
type errScorer struct{}

func (errScorer) Score(context.Context, string, string, string) (rollout.Verdict, error) {
	return rollout.Verdict{}, errors.New("judge: gave up after 4 attempts")
}

// TestClassify checks the rollout-level rows of the class table: a runner
// panic, a planner failure of either kind, an executor's infra failure, a
// judge that did not answer and a rollout tainted by tool outages.
func TestClassify(t *testing.T) {
	answer := func() *agents.Trajectory {
		return &agents.Trajectory{Role: agents.RolePlanner, Final: "<answer>x</answer>", Answer: "x", FormatOK: true}
	}
	calls := func(classes ...failure.Class) []agents.Step {
		var st agents.Step
		for _, c := range classes {
			st.Calls = append(st.Calls, agents.CallRecord{Name: "search", Meta: tools.Meta{Tool: "search", Provider: "serper", Class: c}})
		}
		return []agents.Step{st}
	}
	outage, ok := failure.ClassServer, failure.ClassOK
	cases := []struct {
		name   string
		runner runnerFunc
		scorer rollout.Scorer
		policy FailurePolicy
		kind   failure.Kind
		cause  failure.Cause
	}{
		{"ok", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			return &agents.Rollout{Planner: answer(), Answer: "x"}
		}, exactScorer{}, FailurePolicy{}, failure.KindNone, ""},
		{"panic", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { panic("boom") },
			exactScorer{}, FailurePolicy{}, failure.KindInfra, failure.CauseRunnerPanic},
		{"no tree", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return nil },
			exactScorer{}, FailurePolicy{}, failure.KindInfra, failure.CauseRunnerPanic},
		{"planner infra", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			return &agents.Rollout{Planner: &agents.Trajectory{Role: agents.RolePlanner, Error: "gave up", FailureKind: failure.KindInfra, FailureCause: failure.CauseEngine5xx}}
		}, exactScorer{}, FailurePolicy{}, failure.KindInfra, failure.CauseEngine5xx},
		{"planner model", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			return &agents.Rollout{Planner: &agents.Trajectory{Role: agents.RolePlanner, Error: "limit", FailureKind: failure.KindModel, FailureCause: failure.CauseWallClock}}
		}, exactScorer{}, FailurePolicy{}, failure.KindModel, failure.CauseWallClock},
		{"unclassified error", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			return &agents.Rollout{Planner: &agents.Trajectory{Role: agents.RolePlanner, Error: "something"}}
		}, exactScorer{}, FailurePolicy{}, failure.KindModel, failure.CauseOther},
		{"executor infra", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			return &agents.Rollout{Planner: answer(), Answer: "x", Executors: []*agents.Trajectory{
				{Role: agents.RoleExecutor, Error: "gave up", FailureKind: failure.KindInfra, FailureCause: failure.CauseEngineTimeout}}}
		}, exactScorer{}, FailurePolicy{}, failure.KindInfra, failure.CauseEngineTimeout},
		{"judge", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			return &agents.Rollout{Planner: answer(), Answer: "x"}
		}, errScorer{}, FailurePolicy{}, failure.KindInfra, failure.CauseJudge},
		{"tool outages over the fraction", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			p := answer()
			p.Steps = calls(outage, outage, ok)
			return &agents.Rollout{Planner: p, Answer: "x"}
		}, exactScorer{}, FailurePolicy{TaintToolOutages: true, MaxToolOutageFraction: 0.5}, failure.KindInfra, failure.CauseToolOutage},
		{"tool outages at the fraction", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			p := answer()
			p.Steps = calls(outage, ok)
			return &agents.Rollout{Planner: p, Answer: "x"}
		}, exactScorer{}, FailurePolicy{TaintToolOutages: true, MaxToolOutageFraction: 0.5}, failure.KindNone, ""},
		{"tool outages untainted", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			p := answer()
			p.Steps = calls(outage, outage)
			return &agents.Rollout{Planner: p, Answer: "x"}
		}, exactScorer{}, FailurePolicy{}, failure.KindNone, ""},
		{"a refused connection is an outage, bad arguments and SSRF refusals are not", func(context.Context, rollout.RolloutTask, Task) *agents.Rollout {
			p := answer()
			p.Steps = calls(failure.ClassNetwork, failure.ClassRefused, failure.ClassInvalidArgs, failure.ClassInvalidArgs)
			return &agents.Rollout{Planner: p, Answer: "x"}
		}, exactScorer{}, FailurePolicy{TaintToolOutages: true, MaxToolOutageFraction: 0.2}, failure.KindInfra, failure.CauseToolOutage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scoring := Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), Scorer: c.scorer, ExpertFallback: rollout.DefaultExpertFallback}
			task := rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q", K: 0}
			r := executeWithRetries(context.Background(), context.Background(), c.policy, resultDigest{}, nil, slog.New(slog.DiscardHandler), nil,
				func(ctx context.Context) RolloutResult {
					return Execute(ctx, c.runner, scoring, task, Task{ID: "q", Answer: "x"})
				})
			if r.FailureKind != c.kind || r.FailureCause != c.cause {
				t.Errorf("kind %q, cause %q; want %q, %q", r.FailureKind, r.FailureCause, c.kind, c.cause)
			}
		})
	}
}

// TestExecuteWithRetries checks that an infra rollout runs again until it
// succeeds or its retries are used up, a model failure never does, and no
// retry starts once the run is stopping.
func TestExecuteWithRetries(t *testing.T) {
	infra := RolloutResult{Tree: &agents.Rollout{}, Error: "x", FailureKind: failure.KindInfra, FailureCause: failure.CauseEngine5xx}
	model := RolloutResult{Tree: &agents.Rollout{}, Error: "x", FailureKind: failure.KindModel, FailureCause: failure.CauseWallClock}
	okRes := RolloutResult{Tree: &agents.Rollout{}}
	script := func(rs ...RolloutResult) (func(context.Context) RolloutResult, *int) {
		n := new(int)
		return func(context.Context) RolloutResult {
			r := rs[min(*n, len(rs)-1)]
			*n++
			return r
		}, n
	}
	p := FailurePolicy{RolloutRetries: 2, RetryWait: time.Millisecond}
	log := slog.New(slog.DiscardHandler)
	bg := context.Background()
	for _, c := range []struct {
		name          string
		results       []RolloutResult
		prior         resultDigest
		stopped       bool
		runs, retries int
		causes        int
		infra         bool
	}{
		{"recovers", []RolloutResult{infra, okRes}, resultDigest{}, false, 2, 1, 1, false},
		{"exhausts", []RolloutResult{infra}, resultDigest{}, false, 3, 2, 2, true},
		{"model failure", []RolloutResult{model}, resultDigest{}, false, 1, 0, 0, false},
		{"stopping", []RolloutResult{infra}, resultDigest{}, true, 1, 0, 0, true},
		{"resumed", []RolloutResult{infra}, resultDigest{Infra: true, Cause: failure.CauseEngine5xx, Retries: 0}, false, 2, 2, 2, true},
	} {
		run, n := script(c.results...)
		stop := bg
		if c.stopped {
			var cancel context.CancelFunc
			stop, cancel = context.WithCancel(bg)
			cancel()
		}
		r := executeWithRetries(bg, stop, p, c.prior, nil, log, nil, run)
		if *n != c.runs || r.Retries != c.retries || len(r.RetryCauses) != c.causes || r.infra() != c.infra {
			t.Errorf("%s: %d runs, %d retries, causes %v, infra %v; want %d, %d, %d causes, %v", c.name, *n, r.Retries, r.RetryCauses, r.infra(), c.runs, c.retries, c.causes, c.infra)
		}
	}
	if w := (FailurePolicy{}).retryWait(1); w != DefaultRetryWait {
		t.Errorf("first wait %v, want %v", w, DefaultRetryWait)
	}
	if w := (FailurePolicy{}).retryWait(10); w != MaxRetryWait {
		t.Errorf("tenth wait %v, want the cap %v", w, MaxRetryWait)
	}
}

// TestCheckUseful checks the stop-when-useless rule and its message.
func TestCheckUseful(t *testing.T) {
	p := FailurePolicy{StopWhenUseless: true, MaxFailedFraction: 0.5, RolloutRetries: 2}
	infra := resultDigest{Failed: true, Infra: true, Cause: failure.CauseEngine4xx, Endpoint: "http://x:8000"}
	model := resultDigest{Failed: true, Cause: failure.CauseTurnBudget}
	ok := resultDigest{}
	for _, c := range []struct {
		name    string
		digests []resultDigest
		want    string
	}{
		{"healthy", []resultDigest{ok, ok, infra, model}, ""},
		{"at the fraction", []resultDigest{ok, ok, infra, infra}, ""},
		{"over the fraction", []resultDigest{ok, infra, infra, infra}, "3 of 4 rollouts are still infra failures after 2 retries (more than --max-failed-fraction 0.5); commonest cause engine_4xx at http://x:8000 (3 rollouts)"},
		{"all failed", []resultDigest{model, model, model, infra}, "all 4 rollouts failed; commonest cause turn_budget (3 rollouts)"},
	} {
		err := checkUseful(p, 3, c.digests)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrUselessStep) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--resume")):
			t.Errorf("%s: %v; want ErrUselessStep with %q and how to resume", c.name, err, c.want)
		}
	}
	if err := checkUseful(FailurePolicy{}, 1, []resultDigest{model}); err != nil {
		t.Errorf("without the rule: %v", err)
	}
}

// TestPendingRetryDigests checks that a rollout's own stored result wins
// over pending retries, and the pending retry with most retries wins.
func TestPendingRetryDigests(t *testing.T) {
	out := map[string]resultDigest{}
	addDigest(out, "r/1/q/0"+pendingRetry+"0", resultDigest{Infra: true, Retries: 0})
	addDigest(out, "r/1/q/0"+pendingRetry+"1", resultDigest{Infra: true, Retries: 1})
	addDigest(out, "r/1/q/1"+pendingRetry+"0", resultDigest{Infra: true})
	addDigest(out, "r/1/q/1", resultDigest{Main: 1})
	addDigest(out, "r/1/q/1"+pendingRetry+"1", resultDigest{Infra: true, Retries: 1})
	if d := out["r/1/q/0"]; !d.Infra || d.Retries != 1 {
		t.Errorf("q/0: %+v, want the pending retry after 1 retry", d)
	}
	if d := out["r/1/q/1"]; d.Infra || d.Main != 1 {
		t.Errorf("q/1: %+v, want its own result", d)
	}
	if len(out) != 2 {
		t.Errorf("%d digests, want 2", len(out))
	}
}

// TestFailurePolicyValidate checks the farm's checks of its settings.
func TestFailurePolicyValidate(t *testing.T) {
	var msgs []string
	add := func(f string, a ...any) { msgs = append(msgs, f) }
	FailurePolicy{RolloutRetries: -1, MaxToolOutageFraction: 1.5, MaxFailedFraction: -0.1, OnInfra: "drop"}.validate(add)
	if len(msgs) != 4 {
		t.Errorf("%d problems (%v), want 4", len(msgs), msgs)
	}
	if _, err := ParseInfraPolicy("Exclude"); err != nil {
		t.Error(err)
	}
}

// TestDBarAutoLeavesExcludedGroupsOut checks that an automatic d̄ is taken
// over the d_k of the groups a step trains: step 1's group q1 holds an
// infra failure and delegates 9 executors in its other rollouts; with
// exclude its d_k calibrate neither step 1's d̄ nor step 2's (3, the
// quantile of q0's 1…3), while with zero (the group trained) they do (9).
func TestDBarAutoLeavesExcludedGroupsOut(t *testing.T) {
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		switch {
		case task.Step == 1 && task.QueryID == "q1" && task.K == 0:
			return &agents.Rollout{Question: tk.Question, Planner: &agents.Trajectory{Role: agents.RolePlanner, Task: tk.Question,
				Error: "turn 0: llm call gave up after 6 attempt(s)", FailureKind: failure.KindInfra, FailureCause: failure.CauseEngineUnreachable}}
		case task.Step == 1 && task.QueryID == "q1":
			return scriptedRollout(tk, task, 9, tk.Answer)
		case task.Step == 1:
			return scriptedRollout(tk, task, 1+task.K%3, tk.Answer)
		}
		return scriptedRollout(tk, task, 1, tk.Answer)
	})
	for _, tc := range []struct {
		policy   InfraPolicy
		want     int
		excluded int
	}{{InfraExclude, 3, 1}, {InfraZero, 9, 0}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testFarmConfig(dir, runner)
			cfg.Steps, cfg.DBar = 2, rollout.DBarSpec{Auto: true}
			cfg.Failures = FailurePolicy{OnInfra: tc.policy, MaxToolOutageFraction: 0.5, MaxFailedFraction: 0.5}
			sums := mustRunFarm(t, cfg, testTasks(2))
			if sums[0].ExcludedGroups != tc.excluded {
				t.Fatalf("step 1: %d excluded groups, want %d", sums[0].ExcludedGroups, tc.excluded)
			}
			for i, s := range sums {
				if s.DBar != tc.want {
					t.Errorf("step %d: dbar %d, want %d", i+1, s.DBar, tc.want)
				}
			}
		})
	}
}

// TestObservedD checks the d_k an automatic d̄ takes: all of them without
// exclusions or infra failures, and none of a group holding an infra
// failure with exclude.
func TestObservedD(t *testing.T) {
	ds := []resultDigest{{D: 1}, {D: 2}, {D: 0, Infra: true}, {D: 7}, {D: 3}, {D: 4, Failed: true}}
	if got := observedD(ds, 2, false); !slices.Equal(got, []int{1, 2, 0, 7, 3, 4}) {
		t.Errorf("without exclusions: %v", got)
	}
	if got := observedD(ds, 2, true); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Errorf("with exclude: %v", got)
	}
	clean := []resultDigest{{D: 1}, {D: 2}, {D: 3}, {D: 4}}
	if a, b := observedD(clean, 2, true), observedD(clean, 2, false); !slices.Equal(a, b) || !slices.Equal(a, []int{1, 2, 3, 4}) {
		t.Errorf("fault-free: %v and %v, want every d_k", a, b)
	}
}
