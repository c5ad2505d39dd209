package farm

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/remote"
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
		{Name: "visit", Meta: tools.Meta{Tool: "visit", Class: remote.ClassRefused}},
		{Name: "visit", Meta: tools.Meta{Tool: "visit"}},
		{Name: "search", Meta: tools.Meta{Tool: "search", Class: remote.ClassRefused}},
	}
	var sum rollout.StepSummary
	summarize(&sum, []RolloutResult{{Tree: tree}})
	if sum.VisitCalls != 2 || sum.VisitsRefused != 1 {
		t.Errorf("visit_calls %d, visits_refused %d; want 2 and 1", sum.VisitCalls, sum.VisitsRefused)
	}
}
