package farm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// simWorldSeed is the seed of the synthetic web every sim test plays.
const simWorldSeed = 11

// simTasks returns the first n questions of the sim world as tasks.
func simTasks(tb testing.TB, n int) []Task {
	tb.Helper()
	world, err := web.Generate(web.Config{Seed: simWorldSeed, Questions: n})
	if err != nil {
		tb.Fatal(err)
	}
	tasks := make([]Task, n)
	for i, q := range world.Questions[:n] {
		tasks[i] = Task{ID: q.ID, Question: q.Question, Answer: q.Answer}
	}
	return tasks
}

// startSimServers starts the sim web and the sim inference server in this
// process and returns their base URLs.
func startSimServers(tb testing.TB, cfg simllm.Config) (llmURL, webURL string) {
	tb.Helper()
	return startSimWorld(tb, cfg, web.Config{Seed: simWorldSeed})
}

// startSimWorld is startSimServers with the web's configuration.
func startSimWorld(tb testing.TB, cfg simllm.Config, webCfg web.Config) (llmURL, webURL string) {
	tb.Helper()
	world, err := web.Generate(webCfg)
	if err != nil {
		tb.Fatal(err)
	}
	webSrv := httptest.NewServer(world.Handler())
	tb.Cleanup(webSrv.Close)
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	// HTTP/1.1 and unencrypted HTTP/2 (for clients with prior knowledge,
	// see simRunnerConfig.h2c), with room for any number of streams.
	llmSrv := httptest.NewUnstartedServer(srv.Handler())
	llmSrv.Config.Protocols = new(http.Protocols)
	llmSrv.Config.Protocols.SetHTTP1(true)
	llmSrv.Config.Protocols.SetUnencryptedHTTP2(true)
	llmSrv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 250}
	llmSrv.Start()
	tb.Cleanup(func() { llmSrv.Close(); srv.Close() })
	return llmSrv.URL, webSrv.URL
}

// simRunnerConfig sizes the clients of a sim runner.
type simRunnerConfig struct {
	mode rollout.Mode
	// maxInFlight caps each role's concurrent calls (0: the client default).
	maxInFlight int64
	// visitBudget caps visit observations in characters (0: the default).
	visitBudget int
	// h2c makes the model clients speak unencrypted HTTP/2 (prior
	// knowledge), multiplexing every call over a few connections.
	h2c bool
	// rollout is the rollout budget (zero: agents.DefaultRolloutBudget).
	rollout agents.RolloutBudget
	// retry is the model clients' retry policy (zero: the client default).
	retry llm.RetryPolicy
	// wrap, when set, wraps each role's model client (to record calls).
	wrap func(agents.Model) agents.Model
	// searchURL overrides the search provider's base URL (a faulty one).
	searchURL string
	// auto makes each role's request limit adaptive (--concurrency auto);
	// pools, when set, receives each role's pool.
	auto  *llm.AutoConfig
	pools func(role string, p *llm.Pool)
}

// newSimRunner wires real clients and tools to the sim servers, as the
// farm runs them, and returns the mode's AgentRunner.
func newSimRunner(tb testing.TB, llmURL, webURL string, rc simRunnerConfig) *AgentRunner {
	tb.Helper()
	temp := 1.0
	client := func(role string) *llm.Client {
		var hc *http.Client
		if rc.h2c {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.Protocols = new(http.Protocols)
			tr.Protocols.SetUnencryptedHTTP2(true)
			tb.Cleanup(tr.CloseIdleConnections)
			hc = &http.Client{Transport: tr}
		}
		c, err := llm.New(llm.Config{Role: role, Dialect: llm.DialectVLLM, Model: simllm.DefaultModel, Endpoints: []string{llmURL},
			CaptureTokens: true, Sampling: llm.Sampling{Temperature: &temp}, HTTPClient: hc,
			Pool: llm.PoolConfig{MaxInFlightPerEndpoint: rc.maxInFlight, Auto: rc.auto}, Retry: rc.retry})
		if err != nil {
			tb.Fatal(err)
		}
		if rc.pools != nil {
			rc.pools(role, c.Pool())
		}
		tb.Cleanup(c.Close)
		return c
	}
	u, err := url.Parse(webURL)
	if err != nil {
		tb.Fatal(err)
	}
	searchURL := webURL
	if rc.searchURL != "" {
		searchURL = rc.searchURL
	}
	box, err := tools.NewWebToolbox(tools.WebConfig{
		Search:      search.Config{Name: "serper", BaseURL: searchURL, Getenv: func(string) string { return "sim-key" }},
		AllowHosts:  []string{u.Host},
		VisitBudget: rc.visitBudget,
	})
	if err != nil {
		tb.Fatal(err)
	}
	rb := rc.rollout
	if rb == (agents.RolloutBudget{}) {
		rb = agents.DefaultRolloutBudget()
	}
	model := func(role string) agents.Model {
		if rc.wrap != nil {
			return rc.wrap(client(role))
		}
		return client(role)
	}
	execCfg := agents.ExecutorConfig{Model: model("executor"), Tools: box, Budget: agents.DefaultExecutorBudget()}
	if rc.mode == rollout.ModeSingle {
		s, err := agents.NewSingle(execCfg, rb)
		if err != nil {
			tb.Fatal(err)
		}
		return &AgentRunner{Single: s}
	}
	exec, err := agents.NewExecutor(execCfg)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := agents.NewPlanner(agents.PlannerConfig{Model: model("planner"), Executor: exec,
		Budget: agents.DefaultPlannerBudget(), Rollout: rb})
	if err != nil {
		tb.Fatal(err)
	}
	return &AgentRunner{Planner: p}
}

// recordingRunner keeps every tree its inner runner returns, by task id.
type recordingRunner struct {
	inner Runner
	mu    sync.Mutex
	trees map[string]*agents.Rollout
}

func (r *recordingRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	tree := r.inner.Run(ctx, task, t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trees == nil {
		r.trees = map[string]*agents.Rollout{}
	}
	r.trees[task.ID()] = tree
	return tree
}
