package run

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm/gateway"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// defaultGatewayAddr is where a push run's gateway listens when no
// address is given: loopback, a free port.
const defaultGatewayAddr = "127.0.0.1:0"

// CheckGateway reports the gateway keys that cannot work, naming key and
// flag (gateway.Settings.Check). Validate includes it; eval calls it
// alone.
func (c Config) CheckGateway() error { return errors.Join(c.Gateway.Check()...) }

// buildGateway starts the gateway of c in front of the role clients
// (models by role: planner, executor; the single agent's as "agent"). The
// token, when MGRPO_GATEWAY_TOKEN is set, is every request's bearer token.
// Its metrics go to reg when set.
func buildGateway(c Config, models map[string]agents.Model, logger *slog.Logger, reg prometheus.Registerer) (*gateway.Gateway, error) {
	mode, err := rollout.ParseMode(c.Mode)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, name("mode", "mode"), err)
	}
	cfg := gateway.Config{Mode: mode, Models: map[string]agents.Model{}, ModelNames: map[string]string{},
		Sampling: map[string]llm.Sampling{}, MaxTokens: map[string]int{}, AgentURL: c.Gateway.AgentURL,
		PublicURL: c.Gateway.URL, Token: os.Getenv(EnvGatewayToken), RolloutTimeout: c.Budgets.RolloutTimeout.Duration,
		Lease: c.Gateway.Lease.Duration, Logger: logger, Bounds: gateway.BudgetBounds(c.Budgets.PlannerTurns, c.Budgets.ExecutorTurns, c.Budgets.Delegations, c.Budgets.ContextTokens, mode)}
	if reg != nil {
		cfg.Metrics = gateway.NewMetrics()
		if err := cfg.Metrics.Register(reg); err != nil {
			return nil, fmt.Errorf("register the gateway's metrics: %w", err)
		}
	}
	for role, cl := range models {
		e := c.Planner
		if role != gateway.RolePlanner {
			e = c.Executor
		}
		cfg.Models[role], cfg.ModelNames[role], cfg.Sampling[role] = cl, e.Model, e.Sampling()
		cfg.MaxTokens[role] = e.MaxTokens
		if cfg.MaxTokens[role] == 0 {
			cfg.MaxTokens[role] = c.Budgets.MaxTokens
		}
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	addr := c.Gateway.Addr
	if addr == "" {
		addr = defaultGatewayAddr
	}
	if err := g.Listen(addr, gateway.Limits()); err != nil {
		return nil, fmt.Errorf("%s: %w", name("gateway.addr", "gateway-addr"), err)
	}
	how := "push to " + c.Gateway.AgentURL
	if c.Gateway.AgentURL == "" {
		how = "agents pull from " + g.URL() + "/v1/tasks/next"
	}
	logger.Info("gateway listening", "url", g.URL(), "tasks", how)
	return g, nil
}

// farmRunsTools reports whether the farm's own web tools (search, visit)
// serve this run: they do for the built-in agents, never for a gateway
// run, whose agent calls its own tools (the gateway serves only models).
// A gateway run therefore needs no search provider, and preflight skips
// the search probe.
func (c Config) farmRunsTools() bool { return !c.Gateway.Enabled() }
