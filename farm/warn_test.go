package farm

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools"
)

func TestWarnings(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		tasks int
		steps []rollout.StepSummary
		want  []string // substrings, each expected exactly once
		none  bool
	}{
		{name: "group of one", cfg: Config{GroupSize: 1, Steps: 1, BatchSize: 2}, tasks: 5, want: []string{"group_size 1"}},
		{name: "tasks wrap", cfg: Config{GroupSize: 8, Steps: 3, BatchSize: 4}, tasks: 10,
			want: []string{"tasks wrap around", "questions_asked=12", "tasks=10", "first_repeat_step=3"}},
		{name: "ssrf refuses most visits, warned once", cfg: Config{GroupSize: 8, Steps: 2, BatchSize: 1}, tasks: 5,
			steps: []rollout.StepSummary{{Step: 1, VisitCalls: 10, VisitsRefused: 9}, {Step: 2, VisitCalls: 10, VisitsRefused: 10}},
			want:  []string{"SSRF guard refused most page visits", "visits_refused=9", "visit_calls=10", "--allow-host"}},
		{name: "a few refusals are fine", cfg: Config{GroupSize: 8, Steps: 1, BatchSize: 1}, tasks: 5,
			steps: []rollout.StepSummary{{Step: 1, VisitCalls: 10, VisitsRefused: 5}, {Step: 2, VisitCalls: 3, VisitsRefused: 3}}, none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := warnings{log: slog.New(slog.NewTextHandler(&buf, nil))}
			w.atStart(tt.cfg, tt.tasks)
			for _, s := range tt.steps {
				w.afterStep(s)
			}
			out := buf.String()
			if tt.none {
				if out != "" {
					t.Errorf("warned: %s", out)
				}
				return
			}
			if n := strings.Count(out, "level=WARN"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("warning lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestSummaryCountsRefusedVisits(t *testing.T) {
	task := Task{ID: "q", Question: "Q?", Answer: "a"}
	tree := scriptedRollout(task, rollout.RolloutTask{QueryID: "q"}, 1, "a")
	tree.Executors[0].Steps[0].Calls = []agents.CallRecord{
		{Name: "visit", Meta: tools.Meta{Tool: "visit", Class: failure.ClassRefused}},
		{Name: "visit", Meta: tools.Meta{Tool: "visit"}},
		{Name: "search", Meta: tools.Meta{Tool: "search", Class: failure.ClassRefused}},
	}
	var sum rollout.StepSummary
	summarize(&sum, []RolloutResult{{Tree: tree}})
	if sum.VisitCalls != 2 || sum.VisitsRefused != 1 {
		t.Errorf("visit_calls %d, visits_refused %d; want 2 and 1", sum.VisitCalls, sum.VisitsRefused)
	}
}

func TestSummaryStatistics(t *testing.T) {
	task := Task{ID: "q", Question: "Q?", Answer: "a"}
	rt := rollout.RolloutTask{QueryID: "q"}
	ok := scriptedRollout(task, rt, 2, "a") // planner 2 turns × 2 tokens; executors 1 and 2 turns
	cut := scriptedRollout(task, rt, 1, "a")
	cut.Planner.Turns[1].FinishReason = "length"
	cut.Executors[0].Steps[0].Calls = []agents.CallRecord{
		{Name: "search", Meta: tools.Meta{Tool: "search", Class: failure.ClassTimeout}},
		{Name: "search", Meta: tools.Meta{Tool: "search"}},
	}
	results := []RolloutResult{
		{Tree: ok, Scores: rollout.RolloutScores{FormatOK: true, Subs: []rollout.SubScore{{FormatOK: true}, {FormatOK: true}}}, ScoringSeconds: 0.25},
		{Tree: cut, Scores: rollout.RolloutScores{FormatReason: "trajectory error: turn 1: cut", Subs: []rollout.SubScore{{FormatReason: "format errors: bad call"}}},
			ScoringSeconds: 0.5},
	}
	var sum rollout.StepSummary
	summarize(&sum, results)
	if got := sum.ResponseTokens[agents.RolePlanner]; got.Count != 2 || got.Mean != 4 || got.P95 != 4 || got.Max != 4 {
		t.Errorf("planner response tokens %+v, want 2 trajectories of 4", got)
	}
	if got := sum.ResponseTokens[agents.RoleExecutor]; got.Count != 3 || got.Max != 4 || got.P95 != 4 {
		t.Errorf("executor response tokens %+v, want 3 trajectories, longest 4", got)
	}
	if sum.TruncatedTurns != 1 || sum.TruncationRate != 1/float64(sum.LLMCalls) {
		t.Errorf("truncated %d, rate %v of %d calls; want 1", sum.TruncatedTurns, sum.TruncationRate, sum.LLMCalls)
	}
	if sum.FormatErrors["trajectory_error"] != 1 || sum.FormatErrors["format_errors"] != 1 || sum.FormatErrorRate != 2.0/5 {
		t.Errorf("format errors %v at rate %v, want one of each of 5 trajectories", sum.FormatErrors, sum.FormatErrorRate)
	}
	if sum.ToolErrorRate != float64(1)/float64(sum.ToolCalls) {
		t.Errorf("tool error rate %v with %d calls, want 1 error", sum.ToolErrorRate, sum.ToolCalls)
	}
	if sum.ScoringSeconds != 0.75 {
		t.Errorf("scoring seconds %v, want the rollouts' 0.75 summed", sum.ScoringSeconds)
	}
}

func TestStepTimeSplit(t *testing.T) {
	runner := runnerFunc(func(_ context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		return scriptedRollout(tk, task, 1, tk.Answer)
	})
	sums := mustRunFarm(t, testFarmConfig(t.TempDir(), runner), testTasks(2))
	s := sums[0]
	if s.RolloutSeconds <= 0 || s.AssembleSeconds < 0 || s.WriteSeconds <= 0 ||
		s.RolloutSeconds+s.AssembleSeconds+s.WriteSeconds > s.WallSeconds+1e-9 {
		t.Errorf("time split rollout %v + assemble %v + write %v against wall %v", s.RolloutSeconds, s.AssembleSeconds, s.WriteSeconds, s.WallSeconds)
	}
	if s.CompletionTokensPerSecond <= 0 || s.MainZeroVarianceFraction != 1 {
		t.Errorf("tokens/s %v, main zero-variance fraction %v (every rollout answers right: want 1)", s.CompletionTokensPerSecond, s.MainZeroVarianceFraction)
	}
}
