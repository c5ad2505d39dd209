package evalrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/llm"
)

// fakeAgent answers with reply(q) and records every query it was asked.
type fakeAgent struct {
	reply func(ctx context.Context, q agents.Query) *agents.Rollout
	mu    sync.Mutex
	calls []agents.Query
}

func (a *fakeAgent) Run(ctx context.Context, q agents.Query) *agents.Rollout {
	a.mu.Lock()
	a.calls = append(a.calls, q)
	a.mu.Unlock()
	return a.reply(ctx, q)
}

func (a *fakeAgent) queries() []agents.Query {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]agents.Query(nil), a.calls...)
}

// answerRollout is a planner rollout answering answer: a planner with two turns (one delegate call),
// one executor with one turn and two tool calls. Its tokens are 10+20 prompt, 1+2 completion for the
// planner and 100 prompt, 5 completion for the executor.
func answerRollout(answer string) *agents.Rollout {
	turn := func(p, c int) *llm.Turn {
		return &llm.Turn{Usage: openai.Usage{PromptTokens: p, CompletionTokens: c}}
	}
	planner := &agents.Trajectory{Role: agents.RolePlanner, Answer: answer,
		Turns: []*llm.Turn{turn(10, 1), turn(20, 2)},
		Steps: []agents.Step{{Calls: []agents.CallRecord{{Name: agents.ToolDelegate, Executor: 0}}}, {}}}
	exec := &agents.Trajectory{Role: agents.RoleExecutor, Turns: []*llm.Turn{turn(100, 5)},
		Steps: []agents.Step{{Calls: []agents.CallRecord{{Name: "search", Executor: -1}, {Name: "visit", Executor: -1}}}}}
	return &agents.Rollout{Planner: planner, Executors: []*agents.Trajectory{exec}, Answer: answer}
}

// failedRollout is a rollout whose planner trajectory ended in err after one turn.
func failedRollout(err string) *agents.Rollout {
	return &agents.Rollout{Planner: &agents.Trajectory{Role: agents.RolePlanner, Error: err,
		Turns: []*llm.Turn{{Usage: openai.Usage{PromptTokens: 7, CompletionTokens: 3}}}, Steps: []agents.Step{{}}}}
}

// testItems returns n GAIA-like items q0…q(n-1) with answers a0…; levels cycle over 1, 2.
func testItems(n int) []bench.Item {
	items := make([]bench.Item, n)
	for i := range items {
		id := "q" + string(rune('0'+i%10)) + strings.Repeat("x", i/10)
		items[i] = bench.Item{ID: id, Benchmark: bench.GAIA, Question: "question " + id, Answer: "answer " + id,
			Level: string(rune('1' + i%2))}
	}
	return items
}

// answerFor returns the item's answer as prediction when right(q) says so, else "wrong".
func answerFor(items []bench.Item, right func(q agents.Query) bool) func(context.Context, agents.Query) *agents.Rollout {
	byQ := map[string]string{}
	for _, it := range items {
		byQ[it.Question] = it.Answer
	}
	return func(_ context.Context, q agents.Query) *agents.Rollout {
		if right(q) {
			return answerRollout(byQ[q.Question])
		}
		return answerRollout("wrong")
	}
}

func mustReadResults(tb testing.TB, dir string) []bench.Result {
	tb.Helper()
	rs, err := bench.ReadResultsFile(filepath.Join(dir, report.ResultsFile))
	if err != nil {
		tb.Fatal(err)
	}
	return rs
}

// checkEachPairOnce fails unless results hold every (item, run) pair exactly once.
func checkEachPairOnce(tb testing.TB, rs []bench.Result, items []bench.Item, runs int) {
	tb.Helper()
	seen := map[pairID]int{}
	for _, r := range rs {
		seen[pairID{r.ID, r.Run}]++
	}
	for _, it := range items {
		for run := range runs {
			if n := seen[pairID{it.ID, run}]; n != 1 {
				tb.Errorf("%s run %d: %d lines, want 1", it.ID, run, n)
			}
		}
	}
	if got, want := len(rs), len(items)*runs; got != want {
		tb.Errorf("%d lines, want %d", got, want)
	}
}

// withoutLatency zeroes the latency means, the only part of a summary that depends on timing.
func withoutLatency(s report.Summary) report.Summary {
	s.Overall.MeanLatency = 0
	bds := make([]report.Breakdown, len(s.Breakdowns))
	for i, bd := range s.Breakdowns {
		bd.Groups = append([]report.Group(nil), bd.Groups...)
		for j := range bd.Groups {
			bd.Groups[j].Metrics.MeanLatency = 0
		}
		bds[i] = bd
	}
	s.Breakdowns = bds
	return s
}

// readAll returns the contents of every file under dir.
func readAll(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = string(b)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}
