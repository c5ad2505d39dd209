package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/agents/llm"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// openWorld starts the simulated world when cfg asks for it and points
// every endpoint and tool at it; it returns the getenv the tools should use
// (the sim web's search accepts a fixed key). Without sim it returns nil and
// os.Getenv.
func openWorld(cfg *runConfig, logger *slog.Logger) (*simWorld, func(string) string, error) {
	if !cfg.Sim {
		return nil, os.Getenv, nil
	}
	world, err := startSimWorld(cfg.Seed, cfg.Executor.Dialect, logger)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range []*endpointConfig{&cfg.Planner, &cfg.Executor} {
		e.URLs = []string{world.llmURL}
		if e.Model == "" {
			e.Model = "sim-qwen3"
		}
	}
	if cfg.simJudge() {
		cfg.Judge.URLs, cfg.Judge.Dialect = []string{world.llmURL}, "openai"
		if cfg.Judge.Model == "" {
			cfg.Judge.Model = "sim-qwen3"
		}
	}
	cfg.Search.Provider, cfg.Search.URL = "serper", world.webURL
	cfg.Search.AllowHosts = append(cfg.Search.AllowHosts, world.webHost)
	logger.Info("simulated world started", "llm", world.llmURL, "web", world.webURL)
	getenv := func(k string) string {
		if k == search.EnvSerper {
			return simSearchKey
		}
		return os.Getenv(k)
	}
	return world, getenv, nil
}

// agentStack is what a run needs from its endpoints: the agent (planner or
// single) and, when configured, the judge model.
type agentStack struct {
	planner *agents.Planner
	single  *agents.Single
	judge   score.ChatModel
	closers []func()
}

func (s *agentStack) close() {
	for _, c := range s.closers {
		c()
	}
}

// agent returns the stack's agent as one interface.
func (s *agentStack) agent() interface {
	Run(context.Context, agents.Query) *agents.Rollout
} {
	if s.single != nil {
		return s.single
	}
	return s.planner
}

// buildAgents checks the endpoints (preflight) and builds clients, tools
// and the agent of cfg: the single agent when single, else the planner with
// its executors. capture asks the clients for token data (training runs).
func buildAgents(ctx context.Context, cfg runConfig, single, capture bool, getenv func(string) string, logger *slog.Logger) (*agentStack, error) {
	prompts, err := agents.DefaultPrompts().With(cfg.Prompts)
	if err != nil {
		return nil, usageError{fmt.Errorf("prompts: %w", err)}
	}
	if err := preflight(ctx, cfg, single); err != nil {
		return nil, err
	}
	st := &agentStack{}
	ok := false
	defer func() {
		if !ok {
			st.close()
		}
	}()
	client := func(role string, e endpointConfig, capture bool) (*llm.Client, error) {
		s := llm.Sampling{Temperature: e.Temperature, TopP: e.TopP, TopK: e.TopK, Stop: e.Stop, MaxTokens: e.MaxTokens,
			ChatTemplateKwargs: e.ChatTemplateKwargs}
		key := ""
		if e.APIKeyEnv != "" {
			key = os.Getenv(e.APIKeyEnv)
		} else if role == "judge" {
			key = os.Getenv(envJudgeKey)
		}
		c, err := llm.New(llm.Config{Role: role, Dialect: e.Dialect, Model: e.Model, Endpoints: e.URLs, APIKey: key,
			CaptureTokens: capture, Sampling: s, Logger: logger})
		if err != nil {
			return nil, usageError{fmt.Errorf("%s endpoints: %w", role, err)}
		}
		st.closers = append(st.closers, c.Close)
		return c, nil
	}
	executorClient, err := client("executor", cfg.Executor, capture)
	if err != nil {
		return nil, err
	}
	toolbox, err := tools.NewWebToolbox(tools.WebConfig{
		Search:     search.Config{Name: cfg.Search.Provider, BaseURL: cfg.Search.URL, Index: cfg.Search.Index, Getenv: getenv},
		SearchRate: cfg.Search.Rate, MaxQueries: cfg.Search.MaxQueries, Results: cfg.Search.Results,
		AllowHosts: cfg.Search.AllowHosts,
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("search: %w", err)}
	}
	plannerBudget, executorBudget, rolloutBudget := agents.DefaultPlannerBudget(), agents.DefaultExecutorBudget(), agents.DefaultRolloutBudget()
	plannerBudget.MaxTurns, executorBudget.MaxTurns = cfg.Budgets.PlannerTurns, cfg.Budgets.ExecutorTurns
	plannerBudget.MaxTokensPerTurn, executorBudget.MaxTokensPerTurn = cfg.Budgets.MaxTokens, cfg.Budgets.MaxTokens
	plannerBudget.ContextTokens, executorBudget.ContextTokens = cfg.Budgets.ContextTokens, cfg.Budgets.ContextTokens
	rolloutBudget.MaxDelegations, rolloutBudget.WallClock = cfg.Budgets.Delegations, cfg.Budgets.RolloutTimeout.Duration
	execCfg := agents.ExecutorConfig{Model: executorClient, Tools: toolbox, Budget: executorBudget, Prompts: prompts}
	if single {
		if st.single, err = agents.NewSingle(execCfg); err != nil {
			return nil, usageError{err}
		}
	} else {
		plannerClient, err := client("planner", cfg.Planner, capture)
		if err != nil {
			return nil, err
		}
		executor, err := agents.NewExecutor(execCfg)
		if err != nil {
			return nil, usageError{err}
		}
		pc := agents.PlannerConfig{Model: plannerClient, Executor: executor, Budget: plannerBudget, Rollout: rolloutBudget, Prompts: prompts}
		if len(cfg.Reasoner.URLs) > 0 {
			if pc.Reasoner, err = client("reasoner", cfg.Reasoner, false); err != nil {
				return nil, err
			}
		}
		if st.planner, err = agents.NewPlanner(pc); err != nil {
			return nil, usageError{err}
		}
	}
	if len(cfg.Judge.URLs) > 0 {
		judgeClient, err := client("judge", cfg.Judge, false)
		if err != nil {
			return nil, err
		}
		st.judge = score.LLMChat{Client: judgeClient}
	}
	ok = true
	return st, nil
}
