package run

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/farm/gateway"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/mcp"
	"github.com/mgrpo/mgrpo/tools/search"
	"github.com/prometheus/client_golang/prometheus"
)

// EnvJudgeKey names the environment variable holding the judge endpoint's
// API key when the judge's api_key_env does not name another; keys never
// come from flags or files, so they stay out of shell history, process
// lists and configuration files.
const EnvJudgeKey = "MGRPO_JUDGE_API_KEY"

// Options say what Build builds.
type Options struct {
	// Single builds the single agent (mode single) instead of the planner
	// with its executors.
	Single bool
	// Capture asks the model clients for token data (training runs need
	// it; evaluations do not).
	Capture bool
	// Getenv reads the tools' API keys (nil: os.Getenv; see Getenv).
	Getenv func(string) string
	// Logger receives the clients' log lines (nil: discard).
	Logger *slog.Logger
	// Registerer, when set, receives the model clients' and the tools'
	// Prometheus collectors (mgrpo_llm_*, mgrpo_tool_*), shared by every
	// role.
	Registerer prometheus.Registerer
	// Probe checks, before any rollout, what only a call can tell: that
	// each model endpoint serves the configured model and answers a
	// one-token call in its dialect with token ids, and that the search
	// provider answers a query (see preflight). Runs on the embedded
	// simulated world are probed too, as against a standalone sim.
	Probe bool
	// Recorder, when set, records every answer of the agents' models,
	// their tools and the judge (--record); Player, when set, answers them
	// from a recording instead, with no model client built (mgrpo replay).
	Recorder *replay.Recorder
	Player   *replay.Player
	// SharedCache, when set, is the tool cache shared by every worker of
	// the run and by runs on the same store (the run's store.Store serves
	// as it is): the tools look there when their in-memory cache misses
	// and write every fetched result to it. Nil: in-memory cache only.
	SharedCache cache.Cache
}

// Stack is what a run needs from its endpoints: the agent (the planner
// with its executors, or the single agent) and, when configured, the judge
// model. Close releases the clients.
type Stack struct {
	Planner *agents.Planner
	Single  *agents.Single
	// Judge is the LLM judge, nil without one.
	Judge score.ChatModel
	// Gateway, when the run trains the user's own agent, runs every
	// rollout instead of the built-in agents (nil otherwise).
	Gateway *gateway.Gateway
	closers []func()
	// limits are the adaptive pools under --concurrency auto.
	limits []roleLimit
}

// roleLimit is one role's adaptive pool.
type roleLimit struct {
	role string
	pool *llm.Pool
}

// ConcurrencyLimits returns each role's adaptive request limit under
// --concurrency auto (nil for a fixed concurrency), for the progress line
// and mgrpo_farm_concurrency_limit.
func (s *Stack) ConcurrencyLimits() map[string]int64 {
	if len(s.limits) == 0 {
		return nil
	}
	out := make(map[string]int64, len(s.limits))
	for _, l := range s.limits {
		if n, ok := l.pool.ConcurrencyLimit(); ok {
			out[l.role] = n
		}
	}
	return out
}

// Agent is what runs one rollout of a query.
type Agent interface {
	Run(context.Context, agents.Query) *agents.Rollout
}

// Agent returns the stack's agent.
func (s *Stack) Agent() Agent {
	if s.Gateway != nil {
		return gateway.QueryAgent{Gateway: s.Gateway}
	}
	if s.Single != nil {
		return s.Single
	}
	return s.Planner
}

// Close releases the model clients. It is idempotent.
func (s *Stack) Close() {
	for _, c := range s.closers {
		c()
	}
	s.closers = nil
}

// Build checks the endpoints (a preflight of every vLLM/SGLang endpoint's
// /health, so an unreachable server is reported before any rollout) and
// builds the model clients, the web tools and the agents of c. A
// configuration error wraps ErrConfig; a failed preflight does not (the
// configuration may be right and the server down).
func Build(ctx context.Context, c Config, opts Options) (*Stack, error) {
	bd := &builder{c: c, opts: opts, logger: opts.Logger, st: &Stack{}, probed: map[string]*llm.Client{}}
	if bd.logger == nil {
		bd.logger = slog.New(slog.DiscardHandler)
	}
	logger, st := bd.logger, bd.st
	prompts, err := agents.DefaultPrompts().With(c.Prompts)
	if err != nil {
		return nil, fmt.Errorf("%w: prompts: %w", ErrConfig, err)
	}
	ok := false
	defer func() {
		if !ok {
			st.Close()
		}
	}()
	if opts.Registerer != nil {
		bd.llmMetrics = llm.NewMetrics()
		if err := bd.llmMetrics.Register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("register the model client's metrics: %w", err)
		}
		bd.toolMetrics = tools.NewMetrics(opts.Registerer)
	}
	executorClient, err := bd.model("executor", c.Executor, opts.Capture, true)
	if err != nil {
		return nil, err
	}
	var mcpSet *mcp.Set
	if len(c.Tools.MCP) > 0 {
		if mcpSet, err = openMCP(ctx, c, opts.SharedCache, logger); err != nil {
			return nil, err
		}
		st.closers = append(st.closers, mcpSet.Close)
	}
	toolbox, execTools, err := bd.executorTools(mcpSet)
	if err != nil {
		return nil, err
	}
	execCfg := agents.ExecutorConfig{Model: executorClient, Tools: execTools, Budget: bd.budgets().executor, Prompts: prompts}
	roleClients, err := bd.agents(execCfg, mcpSet, prompts)
	if err != nil {
		return nil, err
	}
	if err := bd.judge(); err != nil {
		return nil, err
	}
	// A problem of the tools' configuration (a search key not set) is
	// reported with the endpoints' (issue 50: one attempt, every problem).
	pre := llm.PreflightAll(ctx, bd.preflight)
	var probed error
	if opts.Probe && pre == nil {
		if toolbox == nil && bd.toolsErr == nil {
			logger.Info("preflight: skipped the search provider probe and needs no search settings: the gateway's agent runs its own tools",
				"search_provider", "unused")
		}
		probed = probe(ctx, c, bd.probed, toolbox)
	}
	if err := upfront(bd.toolsErr, pre, probed); err != nil {
		return nil, err
	}
	if c.Gateway.Enabled() {
		if st.Gateway, err = buildGateway(c, roleClients, logger, opts.Registerer); err != nil {
			return nil, err
		}
		st.closers = append(st.closers, func() { _ = st.Gateway.Close() })
	}
	ok = true
	return st, nil
}

// builder holds what Build's steps share: the configuration, the stack
// being built, the metrics its clients report to and the clients to
// preflight and probe.
type builder struct {
	c           Config
	opts        Options
	logger      *slog.Logger
	st          *Stack
	llmMetrics  *llm.Metrics
	toolMetrics *tools.Metrics
	preflight   []*llm.Client
	probed      map[string]*llm.Client
	// toolsErr is the web tools' configuration error, kept to be reported
	// with the endpoints' problems.
	toolsErr error
}

// client builds a role's model client, to be closed with the stack; check
// preflights its endpoints.
func (bd *builder) client(role string, e EndpointConfig, capture, check bool) (*llm.Client, error) {
	// The judge's calls are few and off the rollouts' path: its
	// pool keeps a fixed limit under --concurrency auto.
	var auto *llm.AutoConfig
	if role != "judge" {
		auto = bd.c.Concurrency.PoolAuto()
	}
	cl, err := newClient(role, e, capture, bd.logger, bd.llmMetrics, auto)
	if err != nil {
		return nil, err
	}
	if auto != nil {
		bd.st.limits = append(bd.st.limits, roleLimit{role, cl.Pool()})
	}
	bd.st.closers = append(bd.st.closers, cl.Close)
	// Hosted OpenAI-style APIs have no /health; their first call tells.
	if check && e.Dialect != llm.DialectOpenAI {
		bd.preflight = append(bd.preflight, cl)
	}
	bd.probed[role] = cl
	return cl, nil
}

// model is a role's model: its client, recorded or replayed.
func (bd *builder) model(role string, e EndpointConfig, capture, check bool) (agents.Model, error) {
	if bd.opts.Player != nil {
		return bd.opts.Player.Model(role), nil
	}
	cl, err := bd.client(role, e, capture, check)
	if err != nil {
		return nil, err
	}
	if bd.opts.Recorder != nil {
		return bd.opts.Recorder.Model(role, cl), nil
	}
	return cl, nil
}

// roleBudgets are the agents' budgets of a configuration.
type roleBudgets struct {
	planner, executor agents.Budget
	rollout           agents.RolloutBudget
}

// budgets returns the agents' budgets (agents.BudgetsConfig.Budgets), each
// role's completion cap its own max_tokens, else the budget's.
func (bd *builder) budgets() roleBudgets {
	var r roleBudgets
	r.planner, r.executor, r.rollout = bd.c.Budgets.Budgets(bd.c.maxTokens(bd.c.Planner), bd.c.maxTokens(bd.c.Executor))
	return r
}

// executorTools builds the web toolbox and the executor's tools: the web
// tools with the MCP tools of its role, recorded or replayed.
func (bd *builder) executorTools(mcpSet *mcp.Set) (*tools.Registry, agents.Toolbox, error) {
	c, opts := bd.c, bd.opts
	execRole := mcp.RoleExecutor
	if opts.Single {
		execRole = mcp.RoleSingle
	}
	var toolbox *tools.Registry
	var err error
	if c.farmRunsTools() {
		toolbox, err = tools.NewWebToolbox(tools.WebConfig{
			Search:     search.Config{Name: c.Search.Provider, BaseURL: c.Search.URL, Index: c.Search.Index, Getenv: opts.Getenv},
			SearchRate: c.Search.Rate, MaxQueries: c.Search.MaxQueries, Results: c.Search.Results,
			AllowHosts: c.Search.AllowHosts, Metrics: bd.toolMetrics,
			SharedCache: opts.SharedCache, CacheScope: cacheScope(c), Logger: bd.logger,
		})
		if err != nil {
			bd.toolsErr = fmt.Errorf("%w: %s: %w", ErrConfig, name("search.provider", "search-provider"), err)
			toolbox = nil
		}
	}
	// The built-in agents are built in every run (a gateway run does not
	// call them); without the farm's tools theirs is empty.
	webTools := toolbox
	if webTools == nil {
		if webTools, err = tools.NewRegistry(nil, tools.WithMetrics(bd.toolMetrics)); err != nil {
			return nil, nil, err
		}
	}
	var execTools agents.Toolbox = webTools
	if mcpSet != nil {
		pick := func(s *mcp.Set) []tools.Tool { return c.Tools.MCP.Tools(s, execRole) }
		if execTools, err = newLiveToolbox(mcpSet, webTools, pick, bd.logger); err != nil {
			return nil, nil, fmt.Errorf("%w: tools.mcp: %w", ErrConfig, err)
		}
	}
	switch {
	case opts.Player != nil:
		execTools = opts.Player.Toolbox(execTools)
	case opts.Recorder != nil:
		execTools = opts.Recorder.Toolbox(execTools)
	}
	return toolbox, execTools, nil
}

// agents builds the single agent, or the executor and the planner (its
// MCP tools and reasoner), returning the models the gateway serves by
// role.
func (bd *builder) agents(execCfg agents.ExecutorConfig, mcpSet *mcp.Set, prompts agents.Prompts) (map[string]agents.Model, error) {
	c, st, budgets := bd.c, bd.st, bd.budgets()
	var err error
	if bd.opts.Single {
		if st.Single, err = agents.NewSingle(execCfg, budgets.rollout); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return map[string]agents.Model{gateway.RoleAgent: execCfg.Model}, nil
	}
	plannerClient, err := bd.model("planner", c.Planner, bd.opts.Capture, true)
	if err != nil {
		return nil, err
	}
	roleClients := map[string]agents.Model{gateway.RolePlanner: plannerClient, gateway.RoleExecutor: execCfg.Model}
	executor, err := agents.NewExecutor(execCfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	pc := agents.PlannerConfig{Model: plannerClient, Executor: executor, Budget: budgets.planner, Rollout: budgets.rollout, Prompts: prompts}
	if pt := c.Tools.MCP.Tools(mcpSet, mcp.RolePlanner); len(pt) > 0 {
		empty, err := tools.NewRegistry(nil, tools.WithMetrics(bd.toolMetrics))
		if err != nil {
			return nil, err
		}
		pick := func(s *mcp.Set) []tools.Tool { return c.Tools.MCP.Tools(s, mcp.RolePlanner) }
		if pc.Tools, err = newLiveToolbox(mcpSet, empty, pick, bd.logger); err != nil {
			return nil, fmt.Errorf("%w: tools.mcp: %w", ErrConfig, err)
		}
	}
	if len(c.Reasoner.URLs) > 0 {
		if pc.Reasoner, err = bd.model("reasoner", c.Reasoner, false, false); err != nil {
			return nil, err
		}
	}
	if st.Planner, err = agents.NewPlanner(pc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return roleClients, nil
}

// judge builds the stack's judge, recorded or replayed; none without
// judge endpoints.
func (bd *builder) judge() error {
	c, opts, st := bd.c, bd.opts, bd.st
	switch {
	case len(c.Judge.URLs) > 0 && opts.Player != nil:
		st.Judge = score.Played(opts.Player, c.Judge.Model)
	case len(c.Judge.URLs) > 0:
		judgeClient, err := bd.client("judge", c.Judge, false, false)
		if err != nil {
			return err
		}
		st.Judge = score.LLMChat{Client: judgeClient}
		if opts.Recorder != nil {
			st.Judge = score.Recorded(opts.Recorder, st.Judge, c.Judge.Model)
		}
	}
	return nil
}

// newClient returns the model client of one role's endpoints, its API key
// read from the environment variable the endpoint names (the judge's
// default: EnvJudgeKey). An error wraps ErrConfig.
func newClient(role string, e EndpointConfig, capture bool, logger *slog.Logger, metrics *llm.Metrics, auto *llm.AutoConfig) (*llm.Client, error) {
	env := e.APIKeyEnv
	if env == "" && role == "judge" {
		env = EnvJudgeKey
	}
	key := ""
	if env != "" {
		key = os.Getenv(env)
	}
	cl, err := llm.New(llm.Config{Role: role, Dialect: e.Dialect, Model: e.Model, Endpoints: e.URLs, APIKey: key,
		CaptureTokens: capture, Sampling: e.Sampling(), Logger: logger, Metrics: metrics, Stream: e.Stream, Parser: llm.Parser(e.Parser), Pool: llm.PoolConfig{Auto: auto},
		Retry: llm.RetryPolicy{CallTimeout: e.CallTimeout.Retry(), AttemptTimeout: e.AttemptTimeout.Retry(), IdleTimeout: e.IdleTimeout.Retry()}})
	if err != nil {
		return nil, fmt.Errorf("%w: %s endpoints: %w", ErrConfig, role, err)
	}
	return cl, nil
}

// cacheScope separates the shared tool cache's entries of runs whose tools
// answer the same arguments differently: each seed of the simulated web is
// a different web (its address alone could be reused by another seed).
func cacheScope(c Config) string {
	if c.Sim {
		return fmt.Sprintf("sim seed %d", c.Seed)
	}
	return ""
}

// configure adds the stack's runner and scorers to a farm configuration:
// r_correct is GAIA's exact match, then the judge when there is one; r_expert
// is the judge's rating of each report, or the configuration's fallback. It
// returns a description of r_correct for the start-of-run log.
func (s *Stack) configure(fc *farm.Config) (correctness string) {
	fc.Runner = &farm.AgentRunner{Planner: s.Planner, Single: s.Single}
	if len(s.limits) > 0 {
		fc.ConcurrencyLimits = s.ConcurrencyLimits
	}
	if s.Gateway != nil {
		fc.Runner = s.Gateway
	}
	fc.Scorer, fc.Expert = score.ForRun(s.Judge)
	correctness = "GAIA exact match (no judge)"
	if s.Judge != nil {
		correctness = "GAIA exact match, then the LLM judge"
	}
	return correctness
}
