package view

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// featureRun writes a run for the RL engineer's pages: step 1 has query qa
// (rewards 1 and 0, rollout 1 of invalid format and split by drift) and
// query qb (rewards 0 and 0, rollout 0 failed), and was trained; step 2's
// rollouts all failed.
func featureRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sink := rollout.DirSink{Dir: dir}
	traj := func(q string) *rollout.TrajectoryRecord {
		return &rollout.TrajectoryRecord{Role: "planner", Task: "TASK-" + q, FormatOK: true,
			Turns: []*rollout.TurnRecord{{Message: rollout.MessageRecord{ReasoningContent: "alpha"}, FinishReason: "tool_calls"},
				{Message: rollout.MessageRecord{Content: "beta"}, FinishReason: "stop"}},
			Steps: []rollout.StepRecord{{Calls: []rollout.CallRecord{{Name: "search", Observation: "OBS-" + q}}}, {}}}
	}
	type ro struct {
		reward  float64
		formOK  bool
		err     string
		drifted bool
	}
	write := func(step int, queries map[string][]ro, order []string) {
		var files rollout.StepFiles
		for _, q := range order {
			qs := rollout.QueryStats{QueryID: q, D: []int{0, 0}}
			for k, r := range queries[q] {
				qs.MainRewards = append(qs.MainRewards, r.reward)
				files.Planner = append(files.Planner, rollout.Sample{Run: "f", Step: step, Role: rollout.RolePlanner, QueryID: q, Rollout: k,
					InputIDs: []int{1, 2, 3, 4, 5, 6}, LossMask: []int8{0, 0, 1, 1, 0, 1}, Logprobs: []float64{0, 0, -0.1, -0.2, 0, -0.3},
					Reward: r.reward, Advantage: r.reward - 0.5, NumTurns: 2, FinishReason: "stop", FormatOK: r.formOK})
				rec := record{ID: "f/" + strconv.Itoa(step) + "/" + q + "/" + strconv.Itoa(k), Task: rollout.RolloutTask{Run: "f", Step: step, QueryID: q, K: k},
					Question: "what about " + q, Error: r.err, Scores: rollout.RolloutScores{FormatOK: r.formOK, Correct: r.reward, Main: r.reward},
					Drifts: []int{0}, Tree: &rollout.TreeRecord{Question: "what about " + q, Answer: "ANS-" + q + "-" + strconv.Itoa(k), Planner: traj(q)}}
				if r.drifted {
					rec.Drifts = []int{1}
				}
				raw, err := json.Marshal(rec)
				if err != nil {
					t.Fatal(err)
				}
				files.Rollouts = append(files.Rollouts, raw)
			}
			files.Stats = append(files.Stats, qs)
		}
		if err := sink.WriteStep(context.Background(), step, files); err != nil {
			t.Fatal(err)
		}
	}
	write(1, map[string][]ro{"qa": {{1, true, "", false}, {0, false, "", true}}, "qb": {{0, true, "dead endpoint", false}, {0, true, "", false}}}, []string{"qa", "qb"})
	write(2, map[string][]ro{"qc": {{0, false, "refused", false}, {0, false, "refused", false}}}, []string{"qc"})
	ctx := context.Background()
	s1 := rollout.StepSummary{Step: 1, Queries: 2, Rollouts: 4, FailedRollouts: 1, MeanMainReward: 0.25, Accuracy: 0.25,
		Training: map[string]rollout.RoleTraining{"planner": {Samples: 4, SampledVersion: 0, PreviousVersion: 0, Version: 1, Staleness: 0, LossTokens: 10,
			Metrics: map[string]float64{"loss:sum": -5, "unmatched_tokens:sum": 2, "advantage_order_violations:sum": 0}}}}
	s2 := rollout.StepSummary{Step: 2, Queries: 1, Rollouts: 2, FailedRollouts: 2,
		Training: map[string]rollout.RoleTraining{"planner": {Samples: 2, SampledVersion: 0, PreviousVersion: 1, Version: 2, Staleness: 1, LossTokens: 4,
			Metrics: map[string]float64{"loss:sum": 2}}}}
	for _, s := range []rollout.StepSummary{s1, s2} {
		if err := sink.WriteSummary(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mapDetok decodes ids by a table; err fails every call.
type mapDetok struct {
	pieces map[int]string
	err    error
}

func (d mapDetok) Detokenize(_ context.Context, ids []int) (string, error) {
	if d.err != nil {
		return "", d.err
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.pieces[id])
	}
	return b.String(), nil
}

// attr returns the values of attribute name of the element with id in
// body.
func attr(t *testing.T, body, id, name string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `"[^>]*?` + name + `="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no element %s with %s in the page", id, name)
	}
	return m[1]
}

func TestStepFiltersAndSearch(t *testing.T) {
	h, err := New(featureRun(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		path       string
		want, none []string
	}{
		{"/step/1", []string{`data-query="qa"`, `data-query="qb"`, `id="kept">2<`}, nil},
		{"/step/1?filter=failed", []string{`data-query="qb"`, `class="filter active" data-filter="failed"`}, []string{`data-query="qa"`}},
		{"/step/1?filter=invalid", []string{`data-query="qa"`}, []string{`data-query="qb"`}},
		{"/step/1?filter=zerovar", []string{`data-query="qb"`}, []string{`data-query="qa"`}},
		{"/step/1?filter=drift", []string{`data-query="qa"`}, []string{`data-query="qb"`}},
		{"/step/1?q=ABOUT+QB", []string{`data-query="qb"`, `id="kept">1<`}, []string{`data-query="qa"`}},
		{"/step/1?q=f/1/qa/1", []string{`data-query="qa"`}, []string{`data-query="qb"`}},
		{"/step/1?filter=failed&q=qa", []string{`id="none"`}, []string{`data-query="qa"`, `data-query="qb"`}},
		{"/search?q=what+about", []string{`data-step="1" data-query="qa"`, `data-step="1" data-query="qb"`, `data-step="2" data-query="qc"`, "3 match(es)"}, nil},
		{"/search?q=qc", []string{`data-step="2" data-query="qc"`}, []string{`data-query="qa"`}},
	} {
		status, body := get(t, srv, tc.path)
		if status != 200 {
			t.Errorf("GET %s: status %d", tc.path, status)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: lacks %q", tc.path, w)
			}
		}
		for _, w := range tc.none {
			if strings.Contains(body, w) {
				t.Errorf("GET %s: has %q", tc.path, w)
			}
		}
	}
	if status, body := get(t, srv, "/step/1?filter=nope"); status != 400 || !strings.Contains(body, "want one of failed, invalid, zerovar, drift") {
		t.Errorf("unknown filter: status %d, body %.300s", status, body)
	}
}

func TestStepHistogramsTrainingAndBanner(t *testing.T) {
	h, err := New(featureRun(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, body := get(t, srv, "/step/1")
	// Rewards 1, 0, 0, 0: spread over [0, 1], the first bin holds three.
	if got := attr(t, body, "hist-reward", "data-counts"); got != "3,0,0,0,0,0,0,0,0,1" {
		t.Errorf("reward histogram counts %s", got)
	}
	if got := attr(t, body, "hist-advantage", "data-n"); got != "4" {
		t.Errorf("advantage histogram of %s values, want 4", got)
	}
	for _, w := range []string{`id="training"`, `<td class="loss">-0.5</td>`, `<td class="version">v1</td>`,
		`<tr data-metric="unmatched_tokens:sum" class="badrow">`, `<tr data-metric="advantage_order_violations:sum"><td>advantage_order_violations:sum</td><td class="value">0</td><td class="check">ok</td>`} {
		if !strings.Contains(body, w) {
			t.Errorf("step 1 lacks %q", w)
		}
	}
	if strings.Contains(body, `id="failed-banner"`) {
		t.Error("step 1 has the all-failed banner; one rollout of four failed")
	}
	_, body = get(t, srv, "/step/2")
	if !strings.Contains(body, `id="failed-banner"`) {
		t.Error("step 2, whose rollouts all failed, has no banner")
	}
	if got := attr(t, body, "hist-reward", "data-counts"); got != "2" {
		t.Errorf("step 2's equal rewards: counts %s, want one bar of 2", got)
	}
	_, body = get(t, srv, "/")
	for _, w := range []string{`id="failed-banner"`, `href="/step/2?filter=failed">2</a>`, `<tr data-step="2" class="allfailed">`, "<th>loss / token</th>",
		`<td class="versions"><span title="planner">planner v1→v2</span>`, `<td class="staleness"><span title="planner">1</span>`, `<span class="bad">1 failed</span>`, `id="plot-loss"`} {
		if !strings.Contains(body, w) {
			t.Errorf("run page lacks %q", w)
		}
	}
}

func TestRolloutPrevNext(t *testing.T) {
	h, err := New(featureRun(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for path, want := range map[string][2]string{
		"/step/1/query/qa/rollout/0": {"", "/step/1/query/qa/rollout/1"},
		"/step/1/query/qa/rollout/1": {"/step/1/query/qa/rollout/0", "/step/1/query/qb/rollout/0"},
		"/step/1/query/qb/rollout/1": {"/step/1/query/qb/rollout/0", ""},
	} {
		_, body := get(t, srv, path)
		for i, id := range []string{"prev", "next"} {
			has := strings.Contains(body, `id="`+id+`"`)
			if want[i] == "" && has || want[i] != "" && !strings.Contains(body, `id="`+id+`" rel="`+id+`" href="`+want[i]+`"`) {
				t.Errorf("%s: %s link wrong, want %q", path, id, want[i])
			}
		}
	}
	_, body := get(t, srv, "/step/1/query/qb")
	for _, w := range []string{`<td class="answer">ANS-qb-0</td><td class="answer">ANS-qb-1</td>`, `<td class="turns">2</td><td class="turns">2</td>`,
		`<span class="bad">dead endpoint</span>`, "zero variance", `<td class="advantage">-0.500</td>`} {
		if !strings.Contains(body, w) {
			t.Errorf("query qb lacks %q", w)
		}
	}
}

func TestTokenSpanText(t *testing.T) {
	dir := featureRun(t)
	good := mapDetok{pieces: map[int]string{1: "<sys>", 2: "TASK", 3: "al", 4: "pha", 5: "OBS", 6: "beta"}}
	for name, tc := range map[string]struct {
		det       Detokenizer
		perToken  bool
		source    string
		want, not []string
	}{
		"kept text": {nil, false, SourceKept, []string{"<pre class=\"spantext\">TASK-qa</pre>", "&lt;think&gt;alpha&lt;/think&gt;", "search → OBS-qa", "turn 2 (completion)", "<pre class=\"spantext\">beta</pre>"}, nil},
		"tokenizer": {good, true, SourceTokenizer, []string{`<span class="tt">al</span>`, `<span class="tt">pha</span>`, `data-id="3"`}, []string{`id="textnote"`}},
		"mismatch":  {mapDetok{pieces: map[int]string{3: "zz"}}, true, SourceKept, []string{`id="textnote"`, "not what the farm kept"}, []string{`class="tt"`}},
		"failing":   {mapDetok{err: errors.New("connection refused")}, false, SourceKept, []string{"the tokenizer failed (connection refused)"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			h, err := NewWithOptions(dir, Options{Detokenizer: tc.det, PerToken: tc.perToken})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			_, body := get(t, srv, "/step/1/sample/planner/0")
			if n := strings.Count(body, `data-source="`+tc.source+`"`); n != 4 {
				t.Errorf("%d spans from %s, want 4", n, tc.source)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("lacks %q", w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("has %q", w)
				}
			}
			if n := strings.Count(body, `" data-mask="`); n != 6 {
				t.Errorf("%d tokens shown, want 6", n)
			}
		})
	}
}

func TestPlotAxesFitTheData(t *testing.T) {
	for _, tc := range []struct {
		ys     []float64
		lo, hi float64
	}{
		{[]float64{0.75}, 0.675, 0.825},
		{[]float64{0}, -0.05, 0.05},
		{[]float64{0.2, 0.6}, 0.168, 0.632},
	} {
		lo, hi := fitRange(tc.ys)
		if d := lo - tc.lo; d > 1e-9 || d < -1e-9 {
			t.Errorf("%v: lo %v, want %v", tc.ys, lo, tc.lo)
		}
		if d := hi - tc.hi; d > 1e-9 || d < -1e-9 {
			t.Errorf("%v: hi %v, want %v", tc.ys, hi, tc.hi)
		}
	}
	svg := string(linePlot("p", "one step", []int{1}, []float64{0.75}))
	if !strings.Contains(svg, `data-lo="0.675" data-hi="0.825"`) || !strings.Contains(svg, `class="value"`) {
		t.Errorf("one-step plot: %s", svg)
	}
}
