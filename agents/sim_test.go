package agents

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/llm"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// simStack is the simulated world wired to real clients and tools, as the
// farm runs it.
type simStack struct {
	world    *web.World
	planner  *Planner
	single   *Single
	llmURL   string
	executor *Executor
}

func mustSimStack(tb testing.TB, cfg simllm.Config) *simStack {
	tb.Helper()
	world, err := web.Generate(web.Config{Seed: 11})
	if err != nil {
		tb.Fatal(err)
	}
	webSrv := httptest.NewServer(world.Handler())
	tb.Cleanup(webSrv.Close)
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	llmSrv := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() { llmSrv.Close(); srv.Close() })
	temp := 1.0
	client := func(role string) *llm.Client {
		c, err := llm.New(llm.Config{Role: role, Dialect: llm.DialectVLLM, Model: simllm.DefaultModel, Endpoints: []string{llmSrv.URL},
			CaptureTokens: true, Sampling: llm.Sampling{Temperature: &temp}})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(c.Close)
		return c
	}
	u, _ := url.Parse(webSrv.URL)
	box, err := tools.NewWebToolbox(tools.WebConfig{
		Search:     search.Config{Name: "serper", BaseURL: webSrv.URL, Getenv: func(string) string { return "sim-key" }},
		AllowHosts: []string{u.Host},
	})
	if err != nil {
		tb.Fatal(err)
	}
	exec, err := NewExecutor(ExecutorConfig{Model: client("executor"), Tools: box, Budget: DefaultExecutorBudget()})
	if err != nil {
		tb.Fatal(err)
	}
	single, err := NewSingle(ExecutorConfig{Model: client("executor"), Tools: box, Budget: DefaultExecutorBudget()}, DefaultRolloutBudget())
	if err != nil {
		tb.Fatal(err)
	}
	return &simStack{world: world, planner: mustPlanner(tb.(*testing.T), client("planner"), exec, DefaultRolloutBudget()), single: single, llmURL: llmSrv.URL, executor: exec}
}

// TestPlannerPlaysTheSimWorld runs K rollouts of sim questions through real
// clients, tools and the sim servers: answers are scored against the gold
// answers, rollouts of one question differ, and every trajectory's turns
// assemble into one token-exact sequence.
func TestPlannerPlaysTheSimWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("plays whole rollouts against the sim world")
	}
	cfg := simllm.DefaultConfig()
	cfg.Seed = 5
	st := mustSimStack(t, cfg)
	const questions, k = 8, 4
	correct, total, delegations, valid := 0, 0, map[int]int{}, 0
	differing := 0
	for qi, q := range st.world.Questions[:questions] {
		answers := map[string]bool{}
		for j := range k {
			r := st.planner.Run(context.Background(), Query{Key: q.ID + "/" + string(rune('0'+j)), Question: q.Question, Seed: int64(1000*qi + j)})
			total++
			if r.Planner.Error != "" {
				t.Fatalf("%s rollout %d: %s", q.ID, j, r.Planner.Error)
			}
			if r.Planner.FormatOK {
				valid++
			}
			if r.Planner.FormatOK && strings.EqualFold(r.Answer, q.Answer) {
				correct++
			}
			answers[r.Answer] = true
			delegations[len(r.Executors)]++
			for _, traj := range append([]*Trajectory{r.Planner}, r.Executors...) {
				seqs, drifts, err := llm.Sequences(traj.Turns)
				if err != nil {
					t.Fatalf("%s/%d %s %d: %v", q.ID, j, traj.Role, traj.Index, err)
				}
				if len(seqs) != 1 || len(drifts) != 0 {
					t.Errorf("%s/%d %s %d: %d sequences, %d drifts; want one sequence with the default template", q.ID, j, traj.Role, traj.Index, len(seqs), len(drifts))
				}
			}
		}
		if len(answers) > 1 {
			differing++
		}
	}
	t.Logf("accuracy %d/%d, valid format %d/%d, delegations per rollout %v, questions with differing answers %d/%d", correct, total, valid, total, delegations, differing, questions)
	if correct == 0 || correct == total {
		t.Errorf("accuracy %d/%d: want a policy that is right sometimes, not always", correct, total)
	}
	if len(delegations) < 2 {
		t.Errorf("every rollout delegated the same number of times (%v): d must vary", delegations)
	}
}

func TestSingleAgentPlaysTheSimWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("plays whole rollouts against the sim world")
	}
	cfg := simllm.DefaultConfig()
	st := mustSimStack(t, cfg)
	correct := 0
	for i, q := range st.world.Questions[:8] {
		r := st.single.Run(context.Background(), Query{Key: q.ID, Question: q.Question, Seed: int64(i)})
		if r.Planner.Error != "" {
			t.Fatalf("%s: %s", q.ID, r.Planner.Error)
		}
		if r.Planner.FormatOK && strings.EqualFold(r.Answer, q.Answer) {
			correct++
		}
	}
	if correct == 0 {
		t.Errorf("the single agent answered none of 8 questions")
	}
}
