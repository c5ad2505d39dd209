package report

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
)

// The expected figures below are computed by hand from testdata/results.jsonl (4 questions × 2 runs):
//
//	run 0: q1 correct, q2 wrong, q3 error, q4 judge error → 1/4 = 0.25
//	run 1: q1 correct, q2 correct, q3 wrong, q4 wrong     → 2/4 = 0.50
//	Avg Pass@1 = 0.375, population std = 0.125, Best Pass@1 = 0.5
//	Pass@2: q1 and q2 have a correct run → 2/4 = 0.5
//	majority: q1 "a"×2 correct; q2 tie x/y → earliest (x, wrong); q3 only z (wrong);
//	          q4 only run 1 votes (p, wrong) → 1/4 = 0.25
//	level 1 (q1, q2): runs 1/2 and 2/2 → avg 0.75, std 0.25, pass@2 1, majority 0.5
//	level 2 (q3, q4): runs 0/2 and 0/2 → avg 0, pass@2 0, majority 0
func loadFixture(tb testing.TB) []bench.Result {
	tb.Helper()
	rs, err := bench.ReadResultsFile(filepath.Join("testdata", "results.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestComputeHandMade(t *testing.T) {
	m := Compute(loadFixture(t))
	checks := []struct {
		name      string
		got, want float64
	}{
		{"questions", float64(m.Questions), 4},
		{"runs", float64(m.Runs), 2},
		{"results", float64(m.Results), 8},
		{"run 0", m.PerRun[0], 0.25},
		{"run 1", m.PerRun[1], 0.5},
		{"avg pass@1", m.AvgPass1, 0.375},
		{"std", m.Std, 0.125},
		{"min", m.Min, 0.25},
		{"max", m.Max, 0.5},
		{"best pass@1", m.BestPass1, 0.5},
		{"pass@k", m.PassK, 0.5},
		{"k", float64(m.K), 2},
		{"majority vote", m.MajorityVote, 0.25},
		{"correct", float64(m.Correct), 3},
		{"wrong", float64(m.Wrong), 3},
		{"errors", float64(m.Errors), 1},
		{"judge errors", float64(m.JudgeErrors), 1},
		{"mean turns", m.MeanTurns, 6.0 / 8},
		{"mean tokens", m.MeanTokens, 180.0 / 8},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestSummarizeByLevel(t *testing.T) {
	s := Summarize(loadFixture(t))
	if s.Benchmark != "gaia" {
		t.Errorf("benchmark = %q, want gaia", s.Benchmark)
	}
	if len(s.Breakdowns) != 1 || s.Breakdowns[0].Dimension != "level" {
		t.Fatalf("breakdowns = %+v, want level only", s.Breakdowns)
	}
	g := s.Breakdowns[0].Groups
	if len(g) != 2 || g[0].Key != "1" || g[1].Key != "2" {
		t.Fatalf("groups = %+v", g)
	}
	l1, l2 := g[0].Metrics, g[1].Metrics
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"L1 avg", l1.AvgPass1, 0.75}, {"L1 std", l1.Std, 0.25}, {"L1 pass@k", l1.PassK, 1},
		{"L1 majority", l1.MajorityVote, 0.5}, {"L2 avg", l2.AvgPass1, 0}, {"L2 pass@k", l2.PassK, 0},
		{"L2 errors", float64(l2.Errors), 1}, {"L2 judge errors", float64(l2.JudgeErrors), 1},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestSummarizeWebWalkerDimensions(t *testing.T) {
	rs := []bench.Result{
		{ID: "a", Correct: true, Type: "single_source", Difficulty: "easy", Lang: "en"},
		{ID: "b", Correct: false, Type: "multi_source", Difficulty: "hard", Lang: "zh"},
		{ID: "c", Correct: true, Type: "multi_source", Difficulty: "hard"},
	}
	s := Summarize(rs)
	var dims []string
	for _, b := range s.Breakdowns {
		var keys []string
		for _, g := range b.Groups {
			keys = append(keys, g.Key)
		}
		dims = append(dims, b.Dimension+":"+strings.Join(keys, ","))
	}
	want := "type×difficulty:multi_source/hard,single_source/easy|lang:(none),en,zh"
	if got := strings.Join(dims, "|"); got != want {
		t.Errorf("breakdowns = %s, want %s", got, want)
	}
	if got := s.Breakdowns[0].Groups[0].Metrics.AvgPass1; got != 0.5 {
		t.Errorf("multi_source/hard accuracy = %v, want 0.5", got)
	}
}

func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	body, err := os.ReadFile(filepath.Join("testdata", "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), body, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	var s Summary
	js, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &s); err != nil || !near(s.Overall.AvgPass1, 0.375) {
		t.Errorf("summary.json: %v, avg %v", err, s.Overall.AvgPass1)
	}
	for _, key := range []string{`"avg_pass_at_1"`, `"pass_at_k"`, `"best_pass_at_1"`, `"majority_vote"`, `"judge_errors"`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("summary.json lacks %s", key)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"](accuracy.svg)", "| Avg Pass@1 | 37.5% ± 12.5% (min 25.0%, max 50.0%) |", "| Pass@2 | 50.0% |", "| Majority vote | 25.0% |", "## By level"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, ChartFile))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		_, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("accuracy.svg is not well-formed XML: %v", err)
			}
			break
		}
	}
	if !strings.Contains(string(svg), "level 1") {
		t.Error("chart lacks the level 1 bar")
	}
}

func TestReadResultsNamesLine(t *testing.T) {
	_, err := bench.ReadResults(strings.NewReader("{\"id\":\"a\"}\n{bad\n"), "r.jsonl")
	if err == nil || !strings.Contains(err.Error(), "r.jsonl:2") {
		t.Errorf("error = %v, want r.jsonl:2", err)
	}
}
