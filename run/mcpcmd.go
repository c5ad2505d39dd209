package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/mgrpo/mgrpo/tools/mcp"
)

// checkMCPOnly validates tools.mcp alone (the mgrpo tool mcp commands need
// no run around it).
func (c Config) checkMCPOnly() error {
	var p problems
	c.checkMCP(&p)
	if len(c.Tools.MCP) == 0 {
		p.Add("tools.mcp", "", "no MCP server configured in --config")
	}
	if err := errors.Join(p...); err != nil {
		return fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	return nil
}

// MCPList starts the MCP servers of c's tools.mcp and prints every tool as
// the model would see it (mcp.List). Configuration errors and servers that
// do not start wrap ErrConfig.
func MCPList(ctx context.Context, c Config, w io.Writer, logger *slog.Logger) error {
	stop, err := simMCP(&c, logger)
	if err != nil {
		return err
	}
	defer stop()
	if err := c.checkMCPOnly(); err != nil {
		return err
	}
	set, err := openMCP(ctx, c, nil, logger)
	if err != nil {
		return err
	}
	defer set.Close()
	return c.Tools.MCP.List(set, w)
}

// MCPCall starts the MCP server named server of c's tools.mcp and calls its
// tool with args (mcp.Call). An error observation returns
// tools.ErrToolFailed; an unknown server or tool wraps ErrConfig.
func MCPCall(ctx context.Context, c Config, server, tool, args string, w io.Writer, logger *slog.Logger) error {
	stop, err := simMCP(&c, logger)
	if err != nil {
		return err
	}
	defer stop()
	if err := c.checkMCPOnly(); err != nil {
		return err
	}
	one := c
	if one.Tools.MCP, err = c.Tools.MCP.One(server); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	set, err := openMCP(ctx, one, nil, logger)
	if err != nil {
		return err
	}
	defer set.Close()
	err = mcp.Call(ctx, set, server, tool, args, w)
	var ce *mcp.CallError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %w", ErrConfig, ce.Err)
	}
	return err
}

// simMCP starts the simulated world for a configuration whose tools.mcp
// names `url: sim`, as a --sim run does, so `mgrpo tool mcp` lists and
// calls the documented sim server; it returns the function that stops it.
func simMCP(c *Config, logger *slog.Logger) (func(), error) {
	if !slices.ContainsFunc(c.Tools.MCP, func(s mcp.Spec) bool { return s.URL == mcp.SimURL }) {
		return func() {}, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c.Sim = true
	world, err := StartSim(c, logger)
	if err != nil {
		return nil, fmt.Errorf("url: sim: start the simulated world: %w", err)
	}
	return world.Close, nil
}
