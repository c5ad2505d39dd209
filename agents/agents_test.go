package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

func mustExecutor(t *testing.T, m Model, tb Toolbox, b Budget) *Executor {
	t.Helper()
	e, err := NewExecutor(ExecutorConfig{Model: m, Tools: tb, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustPlanner(t *testing.T, m Model, e *Executor, rb RolloutBudget) *Planner {
	t.Helper()
	p, err := NewPlanner(PlannerConfig{Model: m, Executor: e, Budget: DefaultPlannerBudget(), Rollout: rb})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExecutorSearchThenReport(t *testing.T) {
	m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
		if toolMessages(req) == 0 {
			return callTurn(`search:{"query":["a","b"]}`, `visit:{"url":["http://x"]}`), nil
		}
		return textTurn("<think>\ndone\n</think>\n\nThe founder of X is Y."), nil
	}}
	e := mustExecutor(t, m, &fakeToolbox{}, DefaultExecutorBudget())
	traj := e.Run(context.Background(), "Find the founder of X.", "r1/executor/0", 7, 0)
	if !traj.FormatOK || traj.Error != "" {
		t.Fatalf("FormatOK = %v, errors %v %q", traj.FormatOK, traj.FormatErrors, traj.Error)
	}
	if got, want := traj.Final, "The founder of X is Y."; got != want {
		t.Errorf("Final = %q, want %q (reasoning stripped)", got, want)
	}
	if len(traj.Turns) != 2 || len(traj.Steps) != 2 || traj.NumCalls() != 2 {
		t.Fatalf("turns %d steps %d calls %d, want 2, 2, 2", len(traj.Turns), len(traj.Steps), traj.NumCalls())
	}
	reqs := m.calls()
	second := reqs[1].Messages
	if got := second[len(second)-2]; got.Role != openai.ChatMessageRoleTool || got.ToolCallID != "call-0" || !strings.Contains(got.Content, "search result") {
		t.Errorf("first tool message = %+v, want the search observation for call-0", got)
	}
	if *reqs[0].Sampling.Seed == *reqs[1].Sampling.Seed {
		t.Errorf("turns share seed %d; each turn needs its own", *reqs[0].Sampling.Seed)
	}
	if reqs[0].TrajectoryKey != "r1/executor/0" || len(reqs[0].Tools) != 2 {
		t.Errorf("request key %q with %d tools", reqs[0].TrajectoryKey, len(reqs[0].Tools))
	}
	e.Run(context.Background(), "Find the founder of X.", "r1/executor/0", 7, 0)
	if *m.calls()[2].Sampling.Seed != *reqs[0].Sampling.Seed {
		t.Errorf("the same seed gave a different first-turn seed")
	}
}

func TestPlannerParallelDelegationsKeepCallOrder(t *testing.T) {
	m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
		task := userText(req)
		switch {
		case strings.HasPrefix(task, "Find"):
			return textTurn("Report on " + task), nil
		case toolMessages(req) == 0:
			return callTurn(`delegate:{"task":"Find A."}`, `delegate:{"task":"Find B."}`, `delegate:{"task":"Find C."}`), nil
		default:
			return textTurn("So: <answer>ABC</answer>"), nil
		}
	}}
	p := mustPlanner(t, m, mustExecutor(t, m, &fakeToolbox{}, DefaultExecutorBudget()), DefaultRolloutBudget())
	r := p.Run(context.Background(), Query{Key: "run/0/q1/0", Question: "What is ABC?", Seed: 3})
	if !r.Planner.FormatOK || r.Answer != "ABC" {
		t.Fatalf("planner FormatOK %v answer %q errors %v %q", r.Planner.FormatOK, r.Answer, r.Planner.FormatErrors, r.Planner.Error)
	}
	if len(r.Executors) != 3 {
		t.Fatalf("%d executors, want 3", len(r.Executors))
	}
	for i, want := range []string{"Find A.", "Find B.", "Find C."} {
		if got := r.Executors[i]; got.Task != want || got.Index != i || !got.FormatOK {
			t.Errorf("executor %d: task %q index %d ok %v, want %q", i, got.Task, got.Index, got.FormatOK, want)
		}
		if c := r.Planner.Steps[0].Calls[i]; c.Executor != i || c.Observation != "Report on "+want {
			t.Errorf("call %d: executor %d observation %q", i, c.Executor, c.Observation)
		}
	}
}

func TestFormatValidity(t *testing.T) {
	errModel := errors.New("gave up after 3 attempts")
	tests := []struct {
		name      string
		planner   func(req llm.Request, n int) (*llm.Turn, error)
		budget    RolloutBudget
		wantOK    bool
		wantError string
		wantInErr string
		// wantTurns and wantFinish, when set, are the planner trajectory's
		// turns and finish reason.
		wantTurns  int
		wantFinish string
	}{
		{name: "one answer", planner: func(llm.Request, int) (*llm.Turn, error) { return textTurn("<answer>x</answer>"), nil }, wantOK: true},
		{name: "no answer tags", planner: func(llm.Request, int) (*llm.Turn, error) { return textTurn("x"), nil }, wantInErr: "no <answer>"},
		{name: "two answers", planner: func(llm.Request, int) (*llm.Turn, error) {
			return textTurn("<answer>x</answer> or <answer>y</answer>"), nil
		}, wantInErr: "2 <answer> blocks"},
		{name: "cut off", planner: func(llm.Request, int) (*llm.Turn, error) {
			t := textTurn("<answer>x</answer>")
			t.FinishReason = "length"
			return t, nil
		}, wantInErr: "cut off"},
		{name: "malformed call then answer", planner: func(_ llm.Request, n int) (*llm.Turn, error) {
			if n == 0 {
				t := textTurn(`<tool_call>{"name": "delegate", "arguments": {"task": </tool_call>`)
				t.ToolCallError = &llm.FormatError{Index: 0, Raw: `<tool_call>{"name"…`, Reason: "the call is not valid JSON"}
				return t, nil
			}
			return textTurn("<answer>x</answer>"), nil
		}, wantInErr: "not valid JSON"},
		{name: "model gives up", planner: func(llm.Request, int) (*llm.Turn, error) { return nil, errModel }, wantError: "gave up"},
		{name: "aborted generation", planner: func(_ llm.Request, n int) (*llm.Turn, error) {
			if n == 0 {
				return callTurn(`delegate:{"task":"Find A."}`), nil
			}
			return abortedTurn("<answer>x</ans"), fmt.Errorf("gave up: %w", llm.ErrAborted)
		}, wantError: "partial generation of 3 tokens is kept", wantTurns: 2, wantFinish: "abort"},
		{name: "partial turn without an error", planner: func(llm.Request, int) (*llm.Turn, error) {
			return abortedTurn("<answer>x</answer>"), nil
		}, wantError: "ended before the model finished it", wantTurns: 1, wantFinish: "abort"},
		{name: "turn budget", planner: func(llm.Request, int) (*llm.Turn, error) { return callTurn(`reason:{}`), nil }, wantInErr: "turn budget"},
		{name: "delegation budget", budget: RolloutBudget{MaxDelegations: 1}, planner: func(_ llm.Request, n int) (*llm.Turn, error) {
			if n == 0 {
				return callTurn(`delegate:{"task":"Find A."}`, `delegate:{"task":"Find B."}`), nil
			}
			return textTurn("<answer>x</answer>"), nil
		}, wantInErr: "delegation budget of 1 exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
				if strings.HasPrefix(userText(req), "Find") {
					return textTurn("report"), nil
				}
				defer func() { n++ }()
				return tt.planner(req, n)
			}}
			rb := tt.budget
			if rb == (RolloutBudget{}) {
				rb = DefaultRolloutBudget()
			}
			p := mustPlanner(t, m, mustExecutor(t, m, &fakeToolbox{}, DefaultExecutorBudget()), rb)
			r := p.Run(context.Background(), Query{Key: "k", Question: "Q?"})
			traj := r.Planner
			if traj.FormatOK != tt.wantOK {
				t.Errorf("FormatOK = %v, want %v (errors %v, error %q)", traj.FormatOK, tt.wantOK, traj.FormatErrors, traj.Error)
			}
			if !strings.Contains(traj.Error, tt.wantError) {
				t.Errorf("Error = %q, want it to contain %q", traj.Error, tt.wantError)
			}
			if tt.wantInErr != "" && !strings.Contains(strings.Join(traj.FormatErrors, "; "), tt.wantInErr) {
				t.Errorf("FormatErrors = %v, want one containing %q", traj.FormatErrors, tt.wantInErr)
			}
			if tt.wantTurns != 0 && (len(traj.Turns) != tt.wantTurns || len(traj.Steps) != tt.wantTurns || !traj.Turns[tt.wantTurns-1].Partial()) {
				t.Errorf("%d turns, %d steps; want %d of each, the last partial", len(traj.Turns), len(traj.Steps), tt.wantTurns)
			}
			if tt.wantFinish != "" && traj.FinishReason() != tt.wantFinish {
				t.Errorf("FinishReason = %q, want %q", traj.FinishReason(), tt.wantFinish)
			}
			if tt.wantFinish != "" && traj.Answer != "" {
				t.Errorf("a partial turn gave the answer %q", traj.Answer)
			}
		})
	}
}

func TestMalformedCallIsReportedToTheModel(t *testing.T) {
	var seen string
	n := 0
	m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
		defer func() { n++ }()
		if n == 0 {
			t := textTurn(`<tool_call>{"name": "search"`)
			t.ToolCallError = &llm.FormatError{Index: 0, Raw: `<tool_call>{"name": "search"`, Reason: "unclosed <tool_call> block: end each call with </tool_call>"}
			return t, nil
		}
		seen = req.Messages[len(req.Messages)-1].Content
		return textTurn("report"), nil
	}}
	traj := mustExecutor(t, m, &fakeToolbox{}, DefaultExecutorBudget()).Run(context.Background(), "Find X.", "k", 1, 0)
	if !strings.Contains(seen, "unclosed <tool_call> block") {
		t.Errorf("the model was told %q, want the parse failure", seen)
	}
	if traj.FormatOK || traj.Steps[0].FormatRaw == "" {
		t.Errorf("FormatOK %v, raw %q: want an invalid trajectory keeping the raw text", traj.FormatOK, traj.Steps[0].FormatRaw)
	}
}

func TestAnswerNowNearContextLimit(t *testing.T) {
	var lastUser string
	n := 0
	m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
		defer func() { n++ }()
		lastUser = ""
		if last := req.Messages[len(req.Messages)-1]; last.Role == openai.ChatMessageRoleUser {
			lastUser = last.Content
		}
		if n == 0 {
			t := callTurn(`search:{"query":["a"]}`)
			t.PromptIDs = make([]int32, 900)
			return t, nil
		}
		return textTurn("report"), nil
	}}
	b := DefaultExecutorBudget()
	b.ContextTokens, b.AnswerNowMargin = 1000, 200
	traj := mustExecutor(t, m, &fakeToolbox{}, b).Run(context.Background(), "Find X.", "k", 1, 0)
	if !traj.AnswerNow || !strings.Contains(lastUser, "final report now") {
		t.Errorf("AnswerNow %v, last user message %q; want the answer-now prompt", traj.AnswerNow, lastUser)
	}
}

func TestToolConcurrencyBound(t *testing.T) {
	for _, limit := range []int{1, 3} {
		tb := &fakeToolbox{}
		n := 0
		m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
			defer func() { n++ }()
			if n == 0 {
				return callTurn(`search:{}`, `search:{}`, `search:{}`, `visit:{}`, `visit:{}`, `visit:{}`), nil
			}
			return textTurn("report"), nil
		}}
		b := DefaultExecutorBudget()
		b.ToolConcurrency = limit
		mustExecutor(t, m, tb, b).Run(context.Background(), "Find X.", "k", 1, 0)
		if peak := int(tb.peak.Load()); peak > limit {
			t.Errorf("limit %d: %d calls ran at once", limit, peak)
		}
	}
}

func TestSingleAgent(t *testing.T) {
	m := &scriptModel{respond: func(req llm.Request) (*llm.Turn, error) {
		if toolMessages(req) == 0 {
			return callTurn(`search:{"query":["x"]}`), nil
		}
		return textTurn("<answer>42</answer>"), nil
	}}
	s, err := NewSingle(ExecutorConfig{Model: m, Tools: &fakeToolbox{}, Budget: DefaultExecutorBudget()}, DefaultRolloutBudget())
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run(context.Background(), Query{Key: "k", Question: "Q?", Seed: 1})
	if r.Answer != "42" || !r.Planner.FormatOK || r.Planner.Role != RoleSingle || len(r.Executors) != 0 {
		t.Errorf("single rollout: answer %q ok %v role %s executors %d", r.Answer, r.Planner.FormatOK, r.Planner.Role, len(r.Executors))
	}
	if !strings.Contains(m.calls()[0].Messages[0].Content, "<answer>") {
		t.Errorf("single system prompt does not ask for <answer> tags")
	}
}

func TestPromptOverrides(t *testing.T) {
	p, err := DefaultPrompts().With(map[string]string{PromptExecutorUser: "Task: {{.Task}}"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := p.render(PromptExecutorUser, map[string]any{"Task": "x"}); got != "Task: x" {
		t.Errorf("override rendered %q", got)
	}
	if _, err := DefaultPrompts().With(map[string]string{"planer_system": "x"}); err == nil || !strings.Contains(err.Error(), "planer_system") {
		t.Errorf("unknown prompt name: err = %v", err)
	}
	if _, err := DefaultPrompts().With(map[string]string{PromptPlannerUser: "{{.Question"}); err == nil {
		t.Errorf("a broken template was accepted")
	}
	if s, _ := DefaultPrompts().render(PromptExecutorSystem, map[string]any{}); strings.Contains(s, "<answer>") {
		t.Errorf("the executor prompt mentions <answer>, which asks executors for answers instead of reports")
	}
}
