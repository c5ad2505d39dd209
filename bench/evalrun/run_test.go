package evalrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
)

func TestRunScoresAndFillsResults(t *testing.T) {
	items := testItems(3)
	items[0].Type, items[0].Difficulty, items[0].Lang, items[0].Domain = "single_source", "easy", "en", "news"
	agent := &fakeAgent{reply: func(_ context.Context, q agents.Query) *agents.Rollout {
		switch {
		case q.Question == items[0].Question:
			return answerRollout(" Answer  Q0 ") // GAIA normalization: whitespace and case
		case q.Question == items[1].Question:
			return answerRollout("something else")
		case strings.HasSuffix(q.Key, "/0"):
			return failedRollout("model call gave up")
		default:
			return answerRollout(items[2].Answer)
		}
	}}
	var progress []Progress
	dir := t.TempDir()
	out, err := Run(context.Background(), Config{Benchmark: bench.GAIA, Items: items, Runs: 2, Out: dir, Agent: agent,
		Scorer: score.GAIAExact, Concurrency: 3, Seed: 9, OnProgress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	rs := mustReadResults(t, dir)
	checkEachPairOnce(t, rs, items, 2)
	for _, q := range agent.queries() {
		var id string
		var run int
		if _, err := fmt.Sscanf(strings.ReplaceAll(q.Key, "/", " "), "eval %s %d", &id, &run); err != nil {
			t.Fatalf("key %q: %v", q.Key, err)
		}
		if got, want := q.Seed, PairSeed(9, id, run); got != want {
			t.Errorf("%s: seed %d, want PairSeed %d", q.Key, got, want)
		}
	}
	byPair := map[pairID]bench.Result{}
	for _, r := range rs {
		byPair[pairID{r.ID, r.Run}] = r
	}
	ok := byPair[pairID{"q0", 1}]
	want := bench.Result{ID: "q0", Benchmark: bench.GAIA, Run: 1, Prediction: " Answer  Q0 ", Correct: true, Method: score.MethodExact,
		Turns: 3, Delegations: 1, ToolCalls: 3, PromptTokens: 130, CompletionTokens: 8, LatencySeconds: ok.LatencySeconds,
		Level: "1", Type: "single_source", Difficulty: "easy", Lang: "en", Domain: "news", Hash: items[0].Hash()}
	if diff := cmp.Diff(want, ok); diff != "" {
		t.Errorf("correct result (-want +got):\n%s", diff)
	}
	if r := byPair[pairID{"q1", 0}]; r.Correct || r.Error != "" || r.Outcome() != bench.OutcomeWrong || r.Prediction != "something else" {
		t.Errorf("wrong answer recorded as %+v", r)
	}
	failed := byPair[pairID{"q2", 0}]
	if failed.Outcome() != bench.OutcomeError || failed.Error != "model call gave up" || failed.Prediction != "" || failed.Method != "" {
		t.Errorf("agent error recorded as %+v", failed)
	}
	if failed.Turns != 1 || failed.PromptTokens != 7 || failed.CompletionTokens != 3 {
		t.Errorf("failed rollout's counters: %+v, want its one turn's", failed)
	}
	if r := byPair[pairID{"q2", 1}]; !r.Correct {
		t.Errorf("q2 run 1: %+v, want correct", r)
	}

	o := out.Summary.Overall
	if o.Correct != 3 || o.Wrong != 2 || o.Errors != 1 || o.JudgeErrors != 0 {
		t.Errorf("counts correct/wrong/errors/judge = %d/%d/%d/%d, want 3/2/1/0", o.Correct, o.Wrong, o.Errors, o.JudgeErrors)
	}
	if got, want := o.AvgPass1, 0.5; math.Abs(got-want) > 1e-12 {
		t.Errorf("Avg Pass@1 %v, want %v", got, want)
	}
	if out.Total != 6 || out.Ran != 6 || out.Resumed != 0 || out.Abandoned != 0 || out.NotStarted != 0 {
		t.Errorf("outcome %+v", out)
	}
	var disk report.Summary
	b, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &disk); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out.Summary, disk); diff != "" {
		t.Errorf("summary.json differs from the returned summary:\n%s", diff)
	}
	for _, f := range []string{report.ReportFile, report.ChartFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if len(progress) != 7 {
		t.Fatalf("%d progress reports, want 7 (start and one per pair)", len(progress))
	}
	last := progress[len(progress)-1]
	if last.Done != 6 || last.Total != 6 || last.Correct != 3 || last.Errors != 1 || last.Rate <= 0 {
		t.Errorf("last progress %+v", last)
	}
}

func TestJudgeErrorsAreNotWrongAnswers(t *testing.T) {
	items := testItems(2)
	judge := score.ScorerFunc(func(_ context.Context, c score.Case) (score.Verdict, error) {
		v := score.Verdict{Method: score.MethodJudge, JudgeOutput: []string{"Maybe?"}}
		if c.Question == items[0].Question {
			return v, fmt.Errorf("judge: %w", score.ErrMalformedVerdict)
		}
		v.JudgeOutput, v.Correct = []string{"Correct"}, true
		return v, nil
	})
	dir := t.TempDir()
	var last Progress
	out, err := Run(context.Background(), Config{Items: items, Runs: 1, Out: dir, Scorer: judge,
		Agent:      &fakeAgent{reply: func(context.Context, agents.Query) *agents.Rollout { return answerRollout("x") }},
		OnProgress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	rs := mustReadResults(t, dir)
	for _, r := range rs {
		switch r.ID {
		case "q0":
			if r.Outcome() != bench.OutcomeJudgeError || r.Correct || !strings.Contains(r.JudgeError, "malformed") ||
				!cmp.Equal(r.JudgeOutput, []string{"Maybe?"}) || r.Prediction != "x" {
				t.Errorf("judge error recorded as %+v", r)
			}
		case "q1":
			if !r.Correct || r.Method != score.MethodJudge || !cmp.Equal(r.JudgeOutput, []string{"Correct"}) {
				t.Errorf("judged result recorded as %+v", r)
			}
		}
	}
	if o := out.Summary.Overall; o.JudgeErrors != 1 || o.Wrong != 0 || o.Correct != 1 {
		t.Errorf("overall %+v: want one judge error, no wrong answer", o)
	}
	if last.JudgeErrors != 1 || last.Errors != 0 {
		t.Errorf("progress %+v", last)
	}
}

func TestResumeAfterInterruption(t *testing.T) {
	items := testItems(12)
	const runs = 2
	ctx, cancel := context.WithCancelCause(context.Background())
	var n atomic.Int32
	right := func(q agents.Query) bool { return q.Seed%3 == 0 }
	agent := &fakeAgent{reply: func(c context.Context, q agents.Query) *agents.Rollout {
		if n.Add(1) == 7 {
			cancel(errors.New("operator pressed ctrl-c"))
		}
		return answerFor(items, right)(c, q)
	}}
	dir := t.TempDir()
	cfg := Config{Benchmark: bench.GAIA, Items: items, Runs: runs, Out: dir, Agent: agent, Scorer: score.GAIAExact, Concurrency: 3, Seed: 3}
	out, err := Run(ctx, cfg)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "ctrl-c") {
		t.Fatalf("interrupted run: err %v, want one wrapping context.Canceled and the cause", err)
	}
	first := mustReadResults(t, dir)
	if len(first) == 0 || len(first) >= len(items)*runs {
		t.Fatalf("interrupted run wrote %d lines, want some but not all", len(first))
	}
	if out.Ran != len(first) || out.Ran+out.Abandoned+out.NotStarted != out.Total {
		t.Errorf("outcome %+v with %d lines written", out, len(first))
	}
	if _, err := os.Stat(filepath.Join(dir, report.SummaryFile)); err != nil {
		t.Errorf("interrupted run wrote no summary: %v", err)
	}

	out, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out.Resumed != len(first) || out.Ran != out.Total-len(first) {
		t.Errorf("resumed run: %+v, want %d resumed and the rest ran", out, len(first))
	}
	checkEachPairOnce(t, mustReadResults(t, dir), items, runs)
	asked := map[string]int{}
	for _, q := range agent.queries() {
		asked[q.Key]++
	}
	for k, c := range asked {
		if c != 1 {
			t.Errorf("%s asked %d times across both runs", k, c)
		}
	}

	whole := t.TempDir()
	cfg.Out, cfg.Agent = whole, &fakeAgent{reply: answerFor(items, right)}
	ref, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(withoutLatency(ref.Summary), withoutLatency(out.Summary)); diff != "" {
		t.Errorf("interrupted + resumed summary differs from an uninterrupted one:\n%s", diff)
	}
}

func TestGraceAbandonsPairsInFlight(t *testing.T) {
	items := testItems(4)
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	agent := &fakeAgent{reply: func(c context.Context, q agents.Query) *agents.Rollout {
		if q.Question == items[0].Question {
			return answerRollout(items[0].Answer)
		}
		if started.Add(1) == 2 {
			cancel()
		}
		<-c.Done() // a rollout that only ends when its context does
		return failedRollout(c.Err().Error())
	}}
	dir := t.TempDir()
	cfg := Config{Items: items, Runs: 1, Out: dir, Agent: agent, Scorer: score.GAIAExact, Concurrency: 2, Grace: 20 * time.Millisecond}
	out, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	rs := mustReadResults(t, dir)
	for _, r := range rs {
		if r.Error != "" {
			t.Errorf("an abandoned pair was recorded: %+v", r)
		}
	}
	if out.Abandoned != 2 || out.Ran != len(rs) {
		t.Errorf("outcome %+v, want 2 abandoned, %d ran", out, len(rs))
	}

	cfg.Agent = &fakeAgent{reply: answerFor(items, func(agents.Query) bool { return true })}
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	rs = mustReadResults(t, dir)
	checkEachPairOnce(t, rs, items, 1)
}

func TestSummaryIndependentOfCompletionOrder(t *testing.T) {
	items := testItems(5)
	src := t.TempDir()
	cfg := Config{Items: items, Runs: 3, Out: src, Scorer: score.GAIAExact, Concurrency: 4,
		Agent: &fakeAgent{reply: answerFor(items, func(q agents.Query) bool { return q.Seed%2 == 0 })}}
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	rs := mustReadResults(t, src)
	var want map[string]string
	for trial, order := range [][]int{identity(len(rs)), reversed(len(rs)), interleaved(len(rs))} {
		dir := t.TempDir()
		var b strings.Builder
		for _, i := range order {
			if err := bench.WriteResult(&b, rs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, report.ResultsFile), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg.Out, cfg.Agent = dir, &fakeAgent{reply: func(context.Context, agents.Query) *agents.Rollout {
			t.Error("a complete eval ran the agent")
			return nil
		}}
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range []string{report.SummaryFile, report.ReportFile, report.ChartFile} {
			body, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			got[f] = string(body)
		}
		if trial == 0 {
			want = got
		} else if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order %d: report files differ:\n%s", trial, diff)
		}
	}
}

func identity(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

func reversed(n int) []int {
	o := identity(n)
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		o[i], o[j] = o[j], o[i]
	}
	return o
}

func interleaved(n int) []int {
	var o []int
	for i := 0; i < n; i += 2 {
		o = append(o, i)
	}
	for i := 1; i < n; i += 2 {
		o = append(o, i)
	}
	return o
}

func TestValidate(t *testing.T) {
	good := Config{Items: testItems(2), Runs: 1, Out: "x", Agent: &fakeAgent{}, Scorer: score.GAIAExact}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no items", func(c *Config) { c.Items = nil }, "no items"},
		{"zero runs", func(c *Config) { c.Runs = 0 }, "runs 0"},
		{"no out", func(c *Config) { c.Out = "" }, "no output directory"},
		{"no agent", func(c *Config) { c.Agent = nil }, "no agent"},
		{"no scorer", func(c *Config) { c.Scorer = nil }, "no scorer"},
		{"negative concurrency", func(c *Config) { c.Concurrency = -1 }, "concurrency -1"},
		{"negative grace", func(c *Config) { c.Grace = -time.Second }, "grace -1s"},
		{"duplicate id", func(c *Config) { c.Items = append(c.Items, c.Items[0]) }, "duplicate id q0"},
		{"empty id", func(c *Config) { c.Items = []bench.Item{{}} }, "empty id"},
		{"benchmark mismatch", func(c *Config) { c.Benchmark = bench.XBench }, `benchmark "gaia", eval benchmark "xbench"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			c.Items = append([]bench.Item(nil), good.Items...)
			tt.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestPairSeed(t *testing.T) {
	if PairSeed(1, "a", 0) != PairSeed(1, "a", 0) {
		t.Error("PairSeed is not deterministic")
	}
	seen := map[int64]string{}
	for _, c := range []struct {
		seed uint64
		id   string
		run  int
	}{{1, "a", 0}, {1, "a", 1}, {1, "b", 0}, {2, "a", 0}, {1, "a1", 0}, {1, "a", 10}} {
		s := PairSeed(c.seed, c.id, c.run)
		if s < 0 {
			t.Errorf("PairSeed%v = %d, want non-negative", c, s)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("PairSeed%v equals that of %s", c, prev)
		}
		seen[s] = fmt.Sprint(c)
	}
}
