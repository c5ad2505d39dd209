package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestCostMeterMatchesCountedCalls runs two steps against sim servers that
// count what reaches them, with a price table, and checks the summaries'
// usage against those counts and the cost against the prices.
func TestCostMeterMatchesCountedCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against sim servers")
	}
	dir := t.TempDir()
	s := startSimServers(t, dir, simllm.DefaultConfig(), 3)
	conf := filepath.Join(dir, "run.yaml")
	os.WriteFile(conf, []byte(`prices:
  search_request: 0.001
  visit_request: 0.0005
  judge_call: 0.01
  prompt_per_million: {planner: 1.0, executor: 0.5}
  completion_per_million: {planner: 2.0, executor: 1.0}
`), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "rollout", "--config", conf, "--tasks", s.tasks, "--out", out,
		"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
		"--judge-url", s.llmURL, "--judge-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
		"--steps", "2", "--batch-size", "3", "--group-size", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var run rollout.Usage
	var prompt, completion int64
	for _, s := range sums {
		run.Add(s.Usage)
		prompt += s.PromptTokens
		completion += s.CompletionTokens
	}
	if got, want := int64(run.SearchRequests), s.searches.Load(); got != want || got == 0 {
		t.Errorf("search requests metered %d, the web served %d", got, want)
	}
	if got, want := int64(run.VisitRequests), s.pages.Load(); got != want || got == 0 {
		t.Errorf("page fetches metered %d, the web served %d", got, want)
	}
	if got, want := int64(run.JudgeCalls), s.judgeCalls.Load(); got != want || got == 0 {
		t.Errorf("judge answers metered %d, the judge served %d", got, want)
	}
	if run.PromptTokens["planner"]+run.PromptTokens["executor"] != prompt ||
		run.CompletionTokens["planner"]+run.CompletionTokens["executor"] != completion {
		t.Errorf("tokens by role %v / %v do not add up to the summaries' %d / %d", run.PromptTokens, run.CompletionTokens, prompt, completion)
	}
	want := 0.001*float64(run.SearchRequests) + 0.0005*float64(run.VisitRequests) + 0.01*float64(run.JudgeCalls) +
		(1.0*float64(run.PromptTokens["planner"])+0.5*float64(run.PromptTokens["executor"])+
			2.0*float64(run.CompletionTokens["planner"])+1.0*float64(run.CompletionTokens["executor"]))/1e6
	if math.Abs(run.Cost-want) > 1e-9 {
		t.Errorf("cost %v, want %v from the prices", run.Cost, want)
	}
	if !strings.Contains(stdout, "usage: ") {
		t.Errorf("the run printed no usage line:\n%s", stdout)
	}
}
