package view

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// failureRun writes a one-step run whose q0 rollout 1 failed on the
// infra side (its planner on turn 2) and whose summary counts failures;
// with clean, nothing failed and the summary counts none.
func failureRun(t *testing.T, clean bool) string {
	t.Helper()
	dir := t.TempDir()
	var files rollout.StepFiles
	qs := rollout.QueryStats{QueryID: "q0", MainRewards: []float64{1, 0}, MainMean: 0.5, MainStd: 0.5, D: []int{0, 0}}
	files.Stats = []rollout.QueryStats{qs}
	for k := range 2 {
		rec := record{ID: fmt.Sprintf("f/1/q0/%d", k), Task: rollout.RolloutTask{Run: "f", Step: 1, QueryID: "q0", K: k}, Question: "question q0",
			Scores: rollout.RolloutScores{FormatOK: k == 0, Main: qs.MainRewards[k]},
			Tree:   &rollout.TreeRecord{Question: "question q0", Planner: &rollout.TrajectoryRecord{Role: "planner", Task: "question q0", FormatOK: k == 0}}}
		if k == 1 && !clean {
			rec.Error, rec.FailureKind, rec.FailureCause = "turn 2: gave up", failure.KindInfra, failure.CauseEngine5xx
			p := rec.Tree.Planner
			p.Error, p.FailureKind, p.FailureCause, p.FailureTurn = "turn 2: gave up", failure.KindInfra, failure.CauseEngine5xx, new(2)
		}
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		files.Rollouts = append(files.Rollouts, raw)
	}
	sink := rollout.DirSink{Dir: dir}
	ctx := context.Background()
	if err := sink.WriteStep(ctx, 1, files); err != nil {
		t.Fatal(err)
	}
	sum := rollout.StepSummary{Step: 1, Queries: 1, Rollouts: 2}
	if !clean {
		sum.FailedRollouts, sum.InfraFailures, sum.RolloutRetries, sum.InfraRollouts = 1, map[string]int{"engine_5xx": 3, "engine_timeout": 1}, 3, 1
		sum.ModelFailures = map[string]int{"invalid_format": 2}
	}
	if err := sink.WriteSummary(ctx, sum); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFailureBadgesAndCounts checks that the step page's rollout list and
// the rollout page show a failed rollout's (and trajectory's) failure
// kind and cause, and the step page the summary's non-zero failure counts;
// a run without failures shows none of them.
func TestFailureBadgesAndCounts(t *testing.T) {
	for _, clean := range []bool{false, true} {
		h, err := New(failureRun(t, clean), nil)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		_, step := get(t, srv, "/step/1")
		_, tree := get(t, srv, "/step/1/query/q0/rollout/1")
		_, ok := get(t, srv, "/step/1/query/q0/rollout/0")
		srv.Close()
		badge := `<span class="failure infra" data-kind="infra">infra: engine_5xx</span>`
		if clean {
			for page, body := range map[string]string{"step": step, "rollout": tree} {
				if strings.Contains(body, `class="failure `) || strings.Contains(body, `id="failures"`) {
					t.Errorf("clean run: the %s page shows failures", page)
				}
			}
			continue
		}
		for _, want := range []string{`<tr data-query="q0" data-k="1">`, badge, `id="failures"`,
			`data-count="infra_failures">infra failures <b>4</b> (engine_5xx 3, engine_timeout 1)`, `data-count="rollout_retries">retries <b>3</b>`,
			`data-count="infra_rollouts">still infra <b>1</b>`, `data-count="model_failures">model failures <b>2</b> (invalid_format 2)`} {
			if !strings.Contains(step, want) {
				t.Errorf("step page lacks %q", want)
			}
		}
		if strings.Count(step, `class="failure `) != 1 || strings.Contains(step, "excluded groups") || strings.Contains(step, "tool outages") {
			t.Errorf("step page: want one badge (rollout 1's) and no zero counts")
		}
		if !strings.Contains(tree, `id="failure"><span class="failure infra" data-kind="infra">infra: engine_5xx</span>`) || !strings.Contains(tree, badge+" on turn 3") {
			t.Errorf("rollout page lacks the rollout's or the planner's badge (on turn 3, the index 2 as turns are listed)")
		}
		if strings.Contains(ok, `class="failure `) {
			t.Errorf("the page of a rollout that did not fail shows a badge")
		}
	}
}
