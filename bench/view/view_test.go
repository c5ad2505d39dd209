package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

// fixtureQueries is the number of queries of the fixture's step 1: more
// than one page.
const fixtureQueries = queriesPerPage + 5

// writeFixture writes a run by hand: step 1 complete (with a planner
// trajectory of q0 rollout 0 split in two by drift), step 2 with files but
// no summary line, and step 3 only a hidden temporary directory.
func writeFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sink := rollout.DirSink{Dir: dir}
	var files rollout.StepFiles
	for q := range fixtureQueries {
		qid := fmt.Sprintf("q%d", q)
		qs := rollout.QueryStats{QueryID: qid, MainRewards: []float64{1, 0}, MainMean: 0.5, MainStd: 0.5, D: []int{1, 0}, DBar: 1}
		files.Stats = append(files.Stats, qs)
		for k := range 2 {
			adv := []float64{1, -1}[k]
			parts := 1
			if q == 0 && k == 0 {
				parts = 2
			}
			for part := range parts {
				files.Planner = append(files.Planner, rollout.Sample{Run: "fix", Step: 1, Role: rollout.RolePlanner, QueryID: qid, Rollout: k,
					InputIDs: []int{10 + part, 11, 12, 13}, LossMask: []int8{0, 0, 1, 1}, Logprobs: []float64{0, 0, -0.01, -3},
					Reward: qs.MainRewards[k], Advantage: adv, NumTurns: 1, FinishReason: "stop", FormatOK: true})
			}
			rec := record{ID: fmt.Sprintf("fix/1/%s/%d", qid, k), Task: rollout.RolloutTask{Run: "fix", Step: 1, QueryID: qid, K: k},
				Question: "question of " + qid, GoldAnswer: "gold-" + qid, Scores: rollout.RolloutScores{FormatOK: true, Correct: qs.MainRewards[k], Main: qs.MainRewards[k],
					Verdict: &rollout.Verdict{Correct: qs.MainRewards[k], Method: "llm-judge", Raw: "JUDGE SAYS " + qid}},
				Tree: &rollout.TreeRecord{Question: "question of " + qid, Answer: "answer-" + qid,
					Planner: &rollout.TrajectoryRecord{Role: "planner", Task: "question of " + qid, FormatOK: true,
						Steps: []rollout.StepRecord{{Calls: []rollout.CallRecord{{Name: "delegate", Arguments: json.RawMessage(`{"task":"find it"}`), Observation: "OBS-" + qid, Executor: 0}}}}}}}
			if k == 0 {
				rec.Tree.Executors = []*rollout.TrajectoryRecord{{Role: "executor", Task: "find it", FormatOK: true, Final: "REPORT-" + qid}}
				rec.Scores.Subs = []rollout.SubScore{{FormatOK: true, Expert: 0.7, ExpertRaw: "EXPERT 7/10", Reward: 0.8}}
			}
			raw, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			files.Rollouts = append(files.Rollouts, raw)
		}
	}
	ctx := context.Background()
	if err := sink.WriteStep(ctx, 1, files); err != nil {
		t.Fatal(err)
	}
	if err := sink.WriteSummary(ctx, rollout.StepSummary{Step: 1, Queries: fixtureQueries, Rollouts: 2 * fixtureQueries, MeanMainReward: 0.5, Accuracy: 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := sink.WriteStep(ctx, 2, rollout.StepFiles{Stats: files.Stats[:1], Planner: files.Planner[:1], Rollouts: files.Rollouts[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".step-000003.tmp-123"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// get fetches path from srv and returns the status and body.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestPages(t *testing.T) {
	h, err := New(writeFixture(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tests := []struct {
		name, path string
		status     int
		want, not  []string
	}{
		{"run", "/", 200, []string{`<tr data-step="1">`, StateDone, `<tr data-step="2">`, StateNoSummary, `<tr data-step="3">`, StateWriting, `id="plots"`, `id="plot-reward"`, `href="/curves.svg"`, "1 step(s) done, 2 in progress"}, nil},
		{"step page 1", "/step/1", 200, []string{`data-query="q0"`, `data-query="q19"`, "page 1 of 2", `href="/step/1?page=2"`, `/step/1/sample/planner/0">#0</a> <a class="sample" href="/step/1/sample/planner/1">#1</a>`, `<td class="advantage">-1.000</td>`}, []string{`data-query="q20"`}},
		{"step page 2", "/step/1?page=2", 200, []string{`data-query="q20"`, `data-query="q24"`, "page 2 of 2"}, []string{`data-query="q0"`}},
		{"step without summary", "/step/2", 200, []string{StateNoSummary, `data-query="q0"`}, nil},
		{"step being written", "/step/3", 200, []string{StateWriting, "still being written"}, []string{"error"}},
		{"query", "/step/1/query/q3", 200, []string{"question of q3", "gold-q3", `id="side"`, `<th class="k">rollout 1</th>`, `<td class="answer">answer-q3</td>`, `id="prev" rel="prev" href="/step/1/query/q2"`, `id="next" rel="next" href="/step/1/query/q4"`}, nil},
		{"rollout tree", "/step/1/query/q3/rollout/0", 200, []string{"OBS-q3", "REPORT-q3", "JUDGE SAYS q3", "EXPERT 7/10", `href="#executor-0"`, `id="executor-0"`, "llm-judge", "answer-q3"}, nil},
		{"drift part 1", "/step/1/sample/planner/0", 200, []string{`id="drift-end"`, `/step/1/sample/planner/1">sample #1`, "part 1 of 2", `<span id="ngenerated">2</span>`}, []string{`id="drift-start"`}},
		{"drift part 2", "/step/1/sample/planner/1", 200, []string{`id="drift-start"`, `/step/1/sample/planner/0">sample #0`, "part 2 of 2", `class="t g0" data-mask="1"`, `class="t g3" data-mask="1"`, `class="t p" data-mask="0"`}, []string{`id="drift-end"`}},
		{"single-part sample", "/step/1/sample/planner/2", 200, nil, []string{`id="drift-start"`, `id="drift-end"`, "part "}},
		{"unknown step", "/step/9", 404, []string{"no such step"}, nil},
		{"unknown query", "/step/1/query/nope", 404, []string{`no query &#34;nope&#34;`}, nil},
		{"unknown sample", "/step/1/sample/planner/999", 404, []string{"no planner sample"}, nil},
		{"bad role", "/step/1/sample/judge/0", 404, []string{"want planner or executor"}, nil},
		{"sample of a step being written", "/step/3/sample/planner/0", 404, []string{"in progress"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, srv, tc.path)
			if status != tc.status {
				t.Errorf("GET %s: status %d, want %d\n%s", tc.path, status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: body lacks %q", tc.path, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s: body has %q", tc.path, w)
				}
			}
		})
	}
	status, body := get(t, srv, "/curves.svg")
	if status != 200 || !strings.Contains(body, "<svg") {
		t.Errorf("GET /curves.svg: status %d, body starts %.80q", status, body)
	}
}

func TestTokenPagination(t *testing.T) {
	dir := t.TempDir()
	n := 2*tokensPerPage + 10
	s := rollout.Sample{Run: "r", Step: 1, Role: rollout.RoleExecutor, QueryID: "q", SubIndex: new(int),
		InputIDs: make([]int, n), LossMask: make([]int8, n), Logprobs: make([]float64, n), FinishReason: "stop"}
	if err := (rollout.DirSink{Dir: dir}).WriteStep(context.Background(), 1, rollout.StepFiles{Executor: []rollout.Sample{s}}); err != nil {
		t.Fatal(err)
	}
	h, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for page, want := range map[int]int{1: tokensPerPage, 3: 10} {
		_, body := get(t, srv, fmt.Sprintf("/step/1/sample/executor/0?page=%d", page))
		if got := strings.Count(body, `<span class="t p" data-mask="0"`); got != want {
			t.Errorf("page %d: %d tokens, want %d", page, got, want)
		}
		if !strings.Contains(body, fmt.Sprintf("page %d of 3", page)) {
			t.Errorf("page %d: no pager saying page %d of 3", page, page)
		}
	}
}

func TestNewRejectsWhatIsNotARun(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(empty, "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"empty": empty, "file": file} {
		_, err := New(dir, nil)
		if !errors.Is(err, ErrNotRun) || !strings.Contains(err.Error(), "summary.jsonl") || !strings.Contains(err.Error(), "step-NNNNNN") {
			t.Errorf("%s: New: %v; want ErrNotRun saying what it expected", name, err)
		}
	}
	if _, err := New(filepath.Join(empty, "missing"), nil); err == nil || !strings.Contains(err.Error(), "expected a run directory") {
		t.Errorf("missing: New: %v; want an error saying what it expected", err)
	}
	onlyTmp := t.TempDir()
	if err := os.Mkdir(filepath.Join(onlyTmp, ".step-000001.tmp-9"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New(onlyTmp, nil); err != nil {
		t.Errorf("a run whose first step is being written: New: %v; want it accepted", err)
	}
}
