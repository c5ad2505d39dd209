package evalrun

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/datasets"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/llm"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// mustSimPlanner serves world and a simulated model and returns the real planner stack on them:
// inference clients, the web toolbox (search and visit), an executor and the planner.
func mustSimPlanner(tb testing.TB, world *web.World) *agents.Planner {
	tb.Helper()
	webSrv := httptest.NewServer(world.Handler())
	tb.Cleanup(webSrv.Close)
	cfg := simllm.DefaultConfig()
	cfg.Seed = 5
	model, err := simllm.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	llmSrv := httptest.NewServer(model.Handler())
	tb.Cleanup(func() { llmSrv.Close(); model.Close() })
	temp := 1.0
	client := func(role string) *llm.Client {
		c, err := llm.New(llm.Config{Role: role, Dialect: llm.DialectVLLM, Model: simllm.DefaultModel,
			Endpoints: []string{llmSrv.URL}, Sampling: llm.Sampling{Temperature: &temp}})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(c.Close)
		return c
	}
	u, err := url.Parse(webSrv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	box, err := tools.NewWebToolbox(tools.WebConfig{
		Search:     search.Config{Name: "serper", BaseURL: webSrv.URL, Getenv: func(string) string { return "sim-key" }},
		AllowHosts: []string{u.Host},
	})
	if err != nil {
		tb.Fatal(err)
	}
	exec, err := agents.NewExecutor(agents.ExecutorConfig{Model: client("executor"), Tools: box, Budget: agents.DefaultExecutorBudget()})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := agents.NewPlanner(agents.PlannerConfig{Model: client("planner"), Executor: exec,
		Budget: agents.DefaultPlannerBudget(), Rollout: agents.DefaultRolloutBudget()})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// recordingAgent passes queries to an agent and keeps, by query key, whether the rollout failed and
// what it answered: the test's own record of the predictions, taken before the runner sees them.
type recordingAgent struct {
	Agent
	mu      sync.Mutex
	answers map[string]string
	failed  map[string]bool
}

func (a *recordingAgent) Run(ctx context.Context, q agents.Query) *agents.Rollout {
	r := a.Agent.Run(ctx, q)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers[q.Key], a.failed[q.Key] = r.Answer, r.Planner.Error != ""
	return r
}

// TestEndToEndOnSimTasks exports sim questions in the GAIA and WebWalkerQA layouts, loads them back
// with the benchmark loaders, runs the real planner stack against the sim servers and checks that the
// reported Avg Pass@1 is the accuracy the test computes itself from the sim's gold answers.
func TestEndToEndOnSimTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("plays whole rollouts against the sim world")
	}
	world, err := web.Generate(web.Config{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	const questions, runs = 6, 2
	qs := world.Questions[:questions]
	planner := mustSimPlanner(t, world)

	tests := []struct {
		benchmark, format, file, method string
		// gold finds the sim question of a loaded item.
		gold func(bench.Item) (web.Question, bool)
	}{
		{bench.GAIA, "gaia", "metadata.jsonl", score.Auto, func(it bench.Item) (web.Question, bool) {
			for _, q := range qs {
				if q.ID == it.ID {
					return q, true
				}
			}
			return web.Question{}, false
		}},
		{bench.WebWalkerQA, "webwalkerqa", "webwalkerqa.jsonl", score.Exact, func(it bench.Item) (web.Question, bool) {
			for _, q := range qs {
				if q.Question == it.Question {
					return q, true
				}
			}
			return web.Question{}, false
		}},
	}
	for _, tt := range tests {
		t.Run(tt.benchmark, func(t *testing.T) {
			data := t.TempDir()
			f, err := os.Create(filepath.Join(data, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := web.WriteTasks(f, qs, tt.format); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			path := f.Name()
			if tt.benchmark == bench.GAIA {
				path = data // the GAIA loader takes the folder holding metadata.jsonl
			}
			items, err := datasets.Load(tt.benchmark, path, bench.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != questions {
				t.Fatalf("loaded %d items, want %d", len(items), questions)
			}
			scorer, err := score.ForBenchmark(tt.benchmark, tt.method, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recordingAgent{Agent: planner, answers: map[string]string{}, failed: map[string]bool{}}
			out := t.TempDir()
			res, err := Run(context.Background(), Config{Benchmark: tt.benchmark, Items: items, Runs: runs, Out: out,
				Agent: rec, Scorer: scorer, Concurrency: 4, Seed: 21})
			if err != nil {
				t.Fatal(err)
			}

			// The test's own accuracy: each recorded answer against the sim's gold answer.
			var want float64
			correct := 0
			for run := range runs {
				n := 0
				for _, it := range items {
					q, ok := tt.gold(it)
					if !ok {
						t.Fatalf("item %s matches no sim question", it.ID)
					}
					key := PairKey(it.ID, run)
					if _, asked := rec.answers[key]; !asked {
						t.Fatalf("%s was never run", key)
					}
					if !rec.failed[key] && score.QuestionScorer(rec.answers[key], q.Answer) {
						n++
					}
				}
				correct += n
				want += float64(n) / float64(len(items))
			}
			want /= runs
			t.Logf("%s: %d/%d correct, Avg Pass@1 %.3f, Pass@%d %.3f, mean delegations %.2f, mean tool calls %.2f",
				tt.benchmark, correct, len(items)*runs, want, runs, res.Summary.Overall.PassK,
				res.Summary.Overall.MeanDelegations, res.Summary.Overall.MeanToolCalls)
			if correct == 0 {
				t.Errorf("no sim question answered: the test would not tell a broken scorer from a bad agent")
			}
			if got := res.Summary.Overall.AvgPass1; math.Abs(got-want) > 1e-12 {
				t.Errorf("reported Avg Pass@1 %v, the sim's gold answers give %v", got, want)
			}
			var disk report.Summary
			b, err := os.ReadFile(filepath.Join(out, report.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &disk); err != nil {
				t.Fatal(err)
			}
			if got := disk.Overall.AvgPass1; math.Abs(got-want) > 1e-12 {
				t.Errorf("summary.json Avg Pass@1 %v, want %v", got, want)
			}
			if disk.Benchmark != tt.benchmark || len(disk.Breakdowns) == 0 {
				t.Errorf("summary.json benchmark %q with %d breakdowns, want %q with a category breakdown", disk.Benchmark, len(disk.Breakdowns), tt.benchmark)
			}
			rs := mustReadResults(t, out)
			checkEachPairOnce(t, rs, items, runs)
			for _, r := range rs {
				if r.Error == "" && (r.Turns == 0 || r.PromptTokens == 0 || r.CompletionTokens == 0 || r.LatencySeconds <= 0) {
					t.Errorf("%s/%d: counters not filled: %+v", r.ID, r.Run, r)
				}
			}
		})
	}
}
