package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/bench/view"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// mustSimRun writes a two-step sim run (B = 2, K = 2) and returns its
// directory.
func mustSimRun(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the farm on the sim")
	}
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI(t, "rollout", "--sim", "--out", out, "--steps", "2", "--batch-size", "2", "--group-size", "2")
	if code != 0 {
		t.Fatalf("rollout exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	return out
}

// driftRun writes a one-step run against a sim server whose chat template
// strips earlier reasoning and which lacks every token route, so the client
// re-sends whole conversations and trajectories are split by drift.
func driftRun(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the farm on the sim")
	}
	dir := t.TempDir()
	cfg := simllm.DefaultConfig()
	cfg.StripReasoning = true
	cfg.Disabled = simllm.RouteFamilies{Render: true, Generate: true, Derender: true, Tokenize: true, TokenPrompt: true}
	s := startSimServers(t, dir, cfg, 2)
	out := filepath.Join(dir, "drift")
	code, stdout, stderr := runCLI(t, "rollout", "--tasks", s.tasks, "--out", out,
		"--planner-url", s.llmURL+"/v1", "--planner-model", "sim-qwen3", "--executor-url", s.llmURL+"/v1", "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
		"--batch-size", "2", "--group-size", "2")
	if code != 0 {
		t.Fatalf("rollout exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	return out
}

// fetch GETs u and returns the status and body.
func fetch(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
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

// f3 formats x as the pages do.
func f3(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// inspection is what the tests read of a rollouts.jsonl line.
type inspection struct {
	Task struct {
		QueryID string `json:"query_id"`
		K       int    `json:"k"`
	} `json:"task"`
	Scores struct {
		Correct float64 `json:"correct"`
		Main    float64 `json:"main"`
	} `json:"scores"`
	Tree struct {
		Answer    string            `json:"answer"`
		Executors []json.RawMessage `json:"executors"`
		Planner   struct {
			Steps []struct {
				Calls []struct {
					Observation string `json:"observation"`
				} `json:"calls"`
			} `json:"steps"`
		} `json:"planner"`
	} `json:"tree"`
}

// readInspections reads a step's rollouts.jsonl.
func readInspections(t *testing.T, path string) []inspection {
	t.Helper()
	var out []inspection
	for _, line := range readLines(t, path) {
		var r inspection
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestViewPagesMatchFiles serves a sim run and checks the numbers of each
// page against the run's files.
func TestViewPagesMatchFiles(t *testing.T) {
	dir := mustSimRun(t)
	srv := serveRun(t, dir)
	sums, err := rollout.ReadSummaries(filepath.Join(dir, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	_, body := fetch(t, srv.URL+"/")
	for _, s := range sums {
		row := fmt.Sprintf(`<tr data-step="%d">`, s.Step)
		i := strings.Index(body, row)
		if i < 0 {
			t.Fatalf("run page lacks step %d", s.Step)
		}
		cells := body[i:]
		cells = cells[:strings.Index(cells, "</tr>")]
		for _, want := range []string{`<td class="reward">` + f3(s.MeanMainReward), `<td class="accuracy">` + f3(s.Accuracy), `<td class="subreward">` + f3(s.MeanSubReward),
			fmt.Sprintf(`<td class="search">%d</td>`, s.Usage.SearchRequests), fmt.Sprintf(`<td class="visits">%d</td>`, s.Usage.VisitRequests),
			fmt.Sprintf(`<td class="judge">%d</td>`, s.Usage.JudgeCalls), fmt.Sprintf(`<td class="cost">%.4f</td>`, s.Usage.Cost)} {
			if !strings.Contains(cells, want) {
				t.Errorf("run page, step %d: row lacks %q:\n%s", s.Step, want, cells)
			}
		}
	}
	var total rollout.Usage
	for _, s := range sums {
		total.Add(s.Usage)
	}
	if want := fmt.Sprintf(`<span class="search">%d</span> search requests · <span class="visits">%d</span> page fetches`, total.SearchRequests, total.VisitRequests); total.SearchRequests == 0 || !strings.Contains(body, want) {
		t.Errorf("run page lacks the run's usage %q", want)
	}
	if code, svg := fetch(t, srv.URL+"/curves.svg"); code != 200 || !strings.Contains(svg, "<svg") {
		t.Errorf("curves: status %d", code)
	}
	for _, s := range sums {
		stepDir := rollout.StepDir(dir, s.Step)
		stats, err := rollout.ReadStatsJSONL(filepath.Join(stepDir, rollout.StatsFile))
		if err != nil {
			t.Fatal(err)
		}
		planner, err := rollout.ReadSamplesJSONL(filepath.Join(stepDir, rollout.PlannerFile))
		if err != nil {
			t.Fatal(err)
		}
		recs := readInspections(t, filepath.Join(stepDir, rollout.RolloutsFile))
		_, page := fetch(t, fmt.Sprintf("%s/step/%d", srv.URL, s.Step))
		for _, qs := range stats {
			for k, reward := range qs.MainRewards {
				var adv, correct float64
				line := -1
				for i, smp := range planner {
					if smp.QueryID == qs.QueryID && smp.Rollout == k {
						adv, line = smp.Advantage, i
						break
					}
				}
				for _, r := range recs {
					if r.Task.QueryID == qs.QueryID && r.Task.K == k {
						correct = r.Scores.Correct
					}
				}
				row := fmt.Sprintf(`<tr data-query="%s" data-k="%d">`+"\n"+`<td>%d</td><td class="reward">%s</td><td class="advantage">%s</td><td class="d">%d</td>`+"\n"+`<td class="correct">%s</td>`,
					qs.QueryID, k, k, f3(reward), f3(adv), qs.D[k], f3(correct))
				if !strings.Contains(page, row) {
					t.Errorf("step %d page lacks the row of %s rollout %d: %q", s.Step, qs.QueryID, k, row)
				}
				if link := fmt.Sprintf(`href="/step/%d/sample/planner/%d"`, s.Step, line); !strings.Contains(page, link) {
					t.Errorf("step %d page lacks the link %s", s.Step, link)
				}
			}
		}
		r := recs[0]
		_, tree := fetch(t, fmt.Sprintf("%s/step/%d/query/%s/rollout/%d", srv.URL, s.Step, r.Task.QueryID, r.Task.K))
		if want := `<b id="main">` + f3(r.Scores.Main) + `</b>`; !strings.Contains(tree, want) {
			t.Errorf("step %d tree lacks %q", s.Step, want)
		}
		if want := `<b id="answer">` + r.Tree.Answer + `</b>`; !strings.Contains(tree, want) {
			t.Errorf("step %d tree lacks %q", s.Step, want)
		}
		if got, want := strings.Count(tree, `<section class="traj" id="executor-`), len(r.Tree.Executors); got != want {
			t.Errorf("step %d tree: %d executor sections, want %d", s.Step, got, want)
		}
		smp := planner[0]
		_, tokens := fetch(t, fmt.Sprintf("%s/step/%d/sample/planner/0", srv.URL, s.Step))
		generated := 0
		for _, m := range smp.LossMask {
			generated += int(m)
		}
		for _, want := range []string{fmt.Sprintf(`<span id="ntokens">%d</span>`, len(smp.InputIDs)), fmt.Sprintf(`<span id="ngenerated">%d</span>`, generated),
			`<b id="advantage">` + f3(smp.Advantage) + `</b>`} {
			if !strings.Contains(tokens, want) {
				t.Errorf("step %d token view lacks %q", s.Step, want)
			}
		}
	}
}

// TestViewMarksDriftSplits checks that the token view of a trajectory split
// by chat-template drift marks the boundary on both sides.
func TestViewMarksDriftSplits(t *testing.T) {
	dir := driftRun(t)
	srv := serveRun(t, dir)
	first, second := driftPair(t, dir)
	_, a := fetch(t, fmt.Sprintf("%s/step/1/sample/planner/%d", srv.URL, first))
	_, b := fetch(t, fmt.Sprintf("%s/step/1/sample/planner/%d", srv.URL, second))
	if !strings.Contains(a, `id="drift-end"`) || !strings.Contains(a, fmt.Sprintf(`/step/1/sample/planner/%d">sample #%d`, second, second)) {
		t.Errorf("sample %d does not mark its drift boundary towards sample %d", first, second)
	}
	if !strings.Contains(b, `id="drift-start"`) || !strings.Contains(b, fmt.Sprintf(`/step/1/sample/planner/%d">sample #%d`, first, first)) {
		t.Errorf("sample %d does not mark its drift boundary from sample %d", second, first)
	}
}

// driftPair returns the lines of the first two consecutive planner samples
// of one trajectory in step 1 of dir.
func driftPair(t *testing.T, dir string) (int, int) {
	t.Helper()
	planner, err := rollout.ReadSamplesJSONL(filepath.Join(rollout.StepDir(dir, 1), rollout.PlannerFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(planner); i++ {
		if planner[i].QueryID == planner[i-1].QueryID && planner[i].Rollout == planner[i-1].Rollout {
			return i - 1, i
		}
	}
	t.Fatalf("no drift split among %d planner samples of a sim that strips reasoning", len(planner))
	return 0, 0
}

func TestViewCommand(t *testing.T) {
	dir := mustSimRun(t)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		code := runMain(ctx, []string{"mgrpo", "view", "--listen", "127.0.0.1:0", dir}, pw, io.Discard, nil, nil)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	var u string
	if sc.Scan() {
		u = strings.TrimPrefix(sc.Text(), "view ")
	}
	go io.Copy(io.Discard, pr)
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want view http://127.0.0.1:PORT/", u)
	}
	if code, body := fetch(t, u+"step/1"); code != 200 || !strings.Contains(body, `data-query=`) {
		t.Errorf("GET %sstep/1: %d", u, code)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("view did not stop after cancel")
	}
}

func TestViewBadInput(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	run := t.TempDir()
	if err := os.WriteFile(filepath.Join(run, rollout.SummaryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"not a run", []string{"view", t.TempDir()}, "not a run directory: no summary.jsonl and no step-NNNNNN/ directory"},
		{"missing", []string{"view", filepath.Join(run, "nope")}, "expected a run directory"},
		{"no directory", []string{"view"}, "view takes one run directory"},
		{"address in use", []string{"view", "--listen", l.Addr().String(), run}, "--listen " + l.Addr().String()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// serveRun serves the viewer over the run in dir until the test ends.
func serveRun(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	h, err := view.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
