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

// excludedRun writes a one-step run of three queries whose middle one,
// q1, was excluded: its rollout 1 stayed an infra failure (engine_5xx),
// so the group has rollouts.jsonl lines but no stats.jsonl line. With
// withSummary the step's summary names the exclusion (with an endpoint).
func excludedRun(t *testing.T, withSummary bool) string {
	t.Helper()
	dir := t.TempDir()
	var files rollout.StepFiles
	for _, q := range []string{"q0", "q1", "q2"} {
		if q != "q1" {
			files.Stats = append(files.Stats, rollout.QueryStats{QueryID: q, MainRewards: []float64{1, 0}, MainMean: 0.5, MainStd: 0.5, D: []int{0, 0}})
		}
		for k := range 2 {
			rec := record{ID: fmt.Sprintf("f/1/%s/%d", q, k), Task: rollout.RolloutTask{Run: "f", Step: 1, QueryID: q, K: k}, Question: "question " + q,
				Scores: rollout.RolloutScores{FormatOK: k == 0, Main: float64(1 - k)},
				Tree:   &rollout.TreeRecord{Question: "question " + q, Planner: &rollout.TrajectoryRecord{Role: "planner", Task: "question " + q, FormatOK: k == 0}}}
			if q == "q1" && k == 1 {
				rec.Error, rec.FailureKind, rec.FailureCause = "turn 0: gave up", failure.KindInfra, failure.CauseEngine5xx
			}
			raw, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			files.Rollouts = append(files.Rollouts, raw)
		}
	}
	sink := rollout.DirSink{Dir: dir}
	ctx := context.Background()
	if err := sink.WriteStep(ctx, 1, files); err != nil {
		t.Fatal(err)
	}
	sum := rollout.StepSummary{Step: 1, Queries: 3, Rollouts: 6, FailedRollouts: 1, InfraRollouts: 1}
	if withSummary {
		sum.ExcludedGroups = 1
		sum.Excluded = []rollout.ExcludedGroup{{QueryID: "q1", Rollout: "f/1/q1/1", Cause: failure.CauseEngine5xx, Endpoint: "http://engine-3"}}
	}
	if err := sink.WriteSummary(ctx, sum); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExcludedGroupsListed checks that the step page lists an excluded
// group's rollouts, in task order, with the badge of what excluded it
// (from the summary when it names the group, else from the group's infra
// rollout), that the excluded filter keeps it alone, and that its query
// and rollout pages are served.
func TestExcludedGroupsListed(t *testing.T) {
	for _, withSummary := range []bool{true, false} {
		t.Run(fmt.Sprintf("summary=%v", withSummary), func(t *testing.T) {
			h, err := New(excludedRun(t, withSummary), nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			_, step := get(t, srv, "/step/1")
			badge := `excluded from the batches: <span class="failure infra" data-kind="infra">infra: engine_5xx</span> (rollout f/1/q1/1`
			if withSummary {
				badge += " at http://engine-3)"
			}
			for _, want := range []string{`<section class="query" data-query="q1">`, `<tr data-query="q1" data-k="0">`, `<tr data-query="q1" data-k="1">`, badge, `<span id="kept">3</span> of 3 queries`} {
				if !strings.Contains(step, want) {
					t.Errorf("step page lacks %q", want)
				}
			}
			if a, b, c := strings.Index(step, `data-query="q0"`), strings.Index(step, `data-query="q1"`), strings.Index(step, `data-query="q2"`); !(a < b && b < c) {
				t.Errorf("queries not in task order: q0 at %d, q1 at %d, q2 at %d", a, b, c)
			}
			if n := strings.Count(step, `class="excluded"`); n != 1 {
				t.Errorf("step page: %d excluded groups shown, want 1", n)
			}
			_, only := get(t, srv, "/step/1?filter=excluded")
			if !strings.Contains(only, `data-query="q1"`) || strings.Contains(only, `<section class="query" data-query="q0"`) || !strings.Contains(only, `<span id="kept">1</span> of 3`) {
				t.Errorf("the excluded filter does not keep q1 alone")
			}
			code, query := get(t, srv, "/step/1/query/q1")
			if code != 200 || !strings.Contains(query, badge) {
				t.Errorf("query page of the excluded group: status %d, badge shown %v", code, strings.Contains(query, badge))
			}
			if code, _ := get(t, srv, "/step/1/query/q1/rollout/1"); code != 200 {
				t.Errorf("rollout page of the excluded group's rollout: status %d", code)
			}
		})
	}
	// A run without exclusions shows none.
	h, err := New(failureRun(t, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if _, step := get(t, srv, "/step/1"); strings.Contains(step, `class="excluded"`) {
		t.Errorf("a step without exclusions shows an excluded group")
	}
}
