package run

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/mcp"
)

// ToolsConfig configures tools beyond the built-in search and visit.
type ToolsConfig struct {
	MCP mcp.Specs `yaml:"mcp" doc:"MCP servers whose tools the agents get beside search and visit: a list of {name, command+args+env (stdio) or url+headers (Streamable HTTP), allow, prefix, timeout, concurrency, cache, max_chars, roles, tools} (docs/tools.md)"`
}

// checkMCP reports what makes tools.mcp unusable without contacting a
// server (mcp.Specs.Check), and the prices of MCP calls that name no
// server of it (mcp.Specs.CheckPrices).
func (c Config) checkMCP(p *problems) {
	*p = append(*p, c.Tools.MCP.Check(c.Sim)...)
	*p = append(*p, c.Tools.MCP.CheckPrices(c.Prices.MCPCall)...)
}

// mcpReserved returns the names the built-in agents' tools already have.
func mcpReserved() []string {
	return []string{"search", "visit", agents.ToolDelegate, agents.ToolReason}
}

// openMCP starts the servers of tools.mcp and lists their tools (the MCP
// preflight, mcp.Specs.Open), their ${NAME} references read from this
// process's environment: what this machine cannot serve, a server that
// does not start or list its tools, and a tool list that cannot be
// offered, are configuration errors naming the server's key.
func openMCP(ctx context.Context, c Config, shared cache.Cache, log *slog.Logger) (*mcp.Set, error) {
	if err := c.Tools.MCP.CheckEnv(os.LookupEnv, exec.LookPath); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	lru := cache.NewLRU(10000, time.Hour)
	var cc cache.Cache = lru
	if shared != nil {
		cc = cache.NewTiered(cache.TieredConfig{Local: lru, Shared: shared, Namespace: cacheScope(c) + "\x00mcp", TTL: time.Hour})
	}
	set, err := c.Tools.MCP.Open(ctx, mcp.Config{Reserved: mcpReserved(), Cache: cc, Logger: log}, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return set, nil
}

// liveToolbox adapts an MCP live toolbox to the agents' Snapshotter, so
// each rollout takes the tools as they are at its start.
type liveToolbox struct{ *mcp.LiveToolbox }

var _ agents.Snapshotter = liveToolbox{}

// Snapshot implements agents.Snapshotter.
func (l liveToolbox) Snapshot(ctx context.Context) agents.Toolbox { return l.LiveToolbox.Snapshot(ctx) }

// newLiveToolbox builds the live toolbox of base and the tools pick takes
// from set (mcp.NewLiveToolbox).
func newLiveToolbox(set *mcp.Set, base *tools.Registry, pick func(*mcp.Set) []tools.Tool, log *slog.Logger) (agents.Toolbox, error) {
	l, err := mcp.NewLiveToolbox(set, base, pick, log)
	if err != nil {
		return nil, err
	}
	return liveToolbox{l}, nil
}
