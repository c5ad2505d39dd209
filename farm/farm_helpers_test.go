package farm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// runnerFunc adapts a function to Runner.
type runnerFunc func(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout

func (f runnerFunc) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	return f(ctx, task, t)
}

// exactScorer is normalized exact match: case, surrounding space and inner
// runs of space do not matter.
type exactScorer struct{}

func (exactScorer) Score(_ context.Context, _, prediction, gold string) (rollout.Verdict, error) {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	if prediction != "" && norm(prediction) == norm(gold) {
		return rollout.Verdict{Correct: 1, Method: "exact"}, nil
	}
	return rollout.Verdict{Correct: 0, Method: "exact"}, nil
}

// scriptedTrajectory builds a trajectory of n turns whose prompts extend
// each other exactly. Token ids start at base so that trajectories can be
// told apart in samples.
func scriptedTrajectory(role string, index, n, base int, final string) *agents.Trajectory {
	tr := &agents.Trajectory{Role: role, Index: index, Task: fmt.Sprintf("%s task %d", role, index), Final: final}
	prompt := []int32{int32(base), int32(base + 1), int32(base + 2)}
	for i := range n {
		c := []int32{int32(base + 10 + 2*i), int32(base + 11 + 2*i)}
		t := &llm.Turn{
			Message:       openai.ChatCompletionMessage{Role: "assistant", Content: fmt.Sprintf("turn %d", i)},
			PromptIDs:     append([]int32(nil), prompt...),
			CompletionIDs: c,
			Logprobs:      []float64{-0.25 * float64(i+1), -0.5},
			FinishReason:  "stop",
			Usage:         openai.Usage{PromptTokens: len(prompt), CompletionTokens: len(c)},
		}
		if i < n-1 {
			t.FinishReason = "tool_calls"
		}
		tr.Turns = append(tr.Turns, t)
		tr.Steps = append(tr.Steps, agents.Step{})
		prompt = append(append(prompt, c...), int32(base+5))
	}
	if final != "" {
		tr.FormatOK = true
	}
	return tr
}

// scriptedRollout builds a rollout with d executors; the planner answers
// answer.
func scriptedRollout(t Task, task rollout.RolloutTask, d int, answer string) *agents.Rollout {
	base := 1000 * (task.K + 1)
	p := scriptedTrajectory(agents.RolePlanner, 0, 2, base, "<answer>"+answer+"</answer>")
	p.Answer = answer
	r := &agents.Rollout{Question: t.Question, Planner: p, Answer: answer}
	for i := range d {
		r.Executors = append(r.Executors, scriptedTrajectory(agents.RoleExecutor, i, 1+i%2, base+100*(i+1), "report"))
		p.Steps[0].Calls = append(p.Steps[0].Calls, agents.CallRecord{Name: agents.ToolDelegate, Executor: i})
	}
	return r
}

// testTasks returns n tasks q0…q(n-1) with answers a0….
func testTasks(n int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("q%d", i), Question: fmt.Sprintf("question %d?", i), Answer: fmt.Sprintf("a%d", i)}
	}
	return tasks
}

// testFarmConfig returns a valid configuration writing to dir.
func testFarmConfig(dir string, runner Runner) Config {
	return Config{
		Run: "test", Seed: 7, Steps: 1, BatchSize: 2, GroupSize: 4, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Fixed: 2},
		Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 3, Runner: runner,
		Sink: rollout.DirSink{Dir: dir},
	}
}

// mustRunFarm builds and runs a farm, failing the test on any error.
func mustRunFarm(tb testing.TB, cfg Config, tasks []Task) []rollout.StepSummary {
	tb.Helper()
	f, err := New(cfg, tasks)
	if err != nil {
		tb.Fatal(err)
	}
	sums, err := f.Run(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return sums
}

// mustReadStep reads the samples and stats of one step.
func mustReadStep(tb testing.TB, dir string, step int) (planner, executor []rollout.Sample, stats []rollout.QueryStats) {
	tb.Helper()
	sd := rollout.StepDir(dir, step)
	var err error
	if planner, err = rollout.ReadSamplesJSONL(filepath.Join(sd, rollout.PlannerFile)); err != nil {
		tb.Fatal(err)
	}
	if executor, err = rollout.ReadSamplesJSONL(filepath.Join(sd, rollout.ExecutorFile)); err != nil {
		tb.Fatal(err)
	}
	if stats, err = rollout.ReadStatsJSONL(filepath.Join(sd, rollout.StatsFile)); err != nil {
		tb.Fatal(err)
	}
	return planner, executor, stats
}

// mustReadFile returns a file's bytes.
func mustReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// inFlight tracks how many calls run at once.
type inFlight struct {
	now, peak atomic.Int64
}

func (c *inFlight) enter() {
	n := c.now.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (c *inFlight) leave() { c.now.Add(-1) }

// countingJudge rates every report with score, or fails with err; it counts
// its calls.
type countingJudge struct {
	score float64
	err   error
	mu    sync.Mutex
	calls []string
}

func (j *countingJudge) Rate(_ context.Context, subtask, report string) (float64, string, error) {
	j.mu.Lock()
	j.calls = append(j.calls, subtask)
	j.mu.Unlock()
	if j.err != nil {
		return 0, "judge down", j.err
	}
	return j.score, fmt.Sprintf("SCORE: %v", j.score), nil
}

// failingScorer always fails.
type failingScorer struct{}

func (failingScorer) Score(context.Context, string, string, string) (rollout.Verdict, error) {
	return rollout.Verdict{}, errors.New("judge unreachable")
}

// wideIDs returns the client's 4-byte ids as the []int a sample and the
// sim's tokenizer take.
func wideIDs(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
