package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/mcp"
)

// checkMCPOnly validates tools.mcp alone (the mgrpo tool mcp commands need
// no run around it).
func (c Config) checkMCPOnly() error {
	var p problems
	c.checkMCP(&p)
	if len(c.Tools.MCP) == 0 {
		p.add("tools.mcp", "", "no MCP server configured in --config")
	}
	if err := errors.Join(p...); err != nil {
		return fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	return nil
}

// MCPList starts the MCP servers of c's tools.mcp and prints every tool as
// the model would see it: its offered name, its server and name there, its
// roles and call policy, the description and the parameters' JSON schema.
// Configuration errors and servers that do not start wrap ErrConfig.
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
	roles := map[string]string{}
	for _, s := range c.Tools.MCP {
		roles[s.Name] = strings.Join(s.mcpRoles(), ",")
	}
	var b strings.Builder
	for _, t := range set.MCPTools() {
		spec := t.Spec()
		timeout, conc, cache := t.Policy()
		cacheText := "off"
		if cache {
			cacheText = "on"
		}
		fmt.Fprintf(&b, "%s\n  server %s, tool %s; roles %s; timeout %v, concurrency %d, cache %s\n", spec.Name, t.Server(), t.Remote(), roles[t.Server()], timeout, conc, cacheText)
		for _, l := range strings.Split(strings.TrimSpace(spec.Description), "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		fmt.Fprintf(&b, "  parameters: %s\n", compactJSON(spec.Parameters))
	}
	if changed := set.Changed(); len(changed) > 0 {
		fmt.Fprintf(&b, "(servers that announced a tool-list change while listed: %s)\n", strings.Join(changed, ", "))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// MCPCall starts the MCP server named server of c's tools.mcp and calls its
// tool (by the server's name for it, or the offered name) with args, a
// JSON object, through a registry as an agent would (the arguments
// validated against the listed schema first), printing the observation. An
// error observation returns tools.ErrToolFailed; an unknown server or tool
// wraps ErrConfig.
func MCPCall(ctx context.Context, c Config, server, tool, args string, w io.Writer, logger *slog.Logger) error {
	stop, err := simMCP(&c, logger)
	if err != nil {
		return err
	}
	defer stop()
	if err := c.checkMCPOnly(); err != nil {
		return err
	}
	i := slices.IndexFunc(c.Tools.MCP, func(s MCPServerConfig) bool { return s.Name == server })
	if i < 0 {
		names := make([]string, len(c.Tools.MCP))
		for j, s := range c.Tools.MCP {
			names[j] = s.Name
		}
		return fmt.Errorf("%w: server %q: not in tools.mcp (it has %s)", ErrConfig, server, strings.Join(names, ", "))
	}
	one := c
	one.Tools.MCP = []MCPServerConfig{c.Tools.MCP[i]}
	set, err := openMCP(ctx, one, nil, logger)
	if err != nil {
		return err
	}
	defer set.Close()
	var found *mcp.Tool
	for _, t := range set.MCPTools() {
		if t.Remote() == tool || t.Spec().Name == tool {
			found = t
		}
	}
	if found == nil {
		var have []string
		for _, t := range set.MCPTools() {
			have = append(have, t.Remote())
		}
		return fmt.Errorf("%w: tool %q: server %s offers %s", ErrConfig, tool, server, strings.Join(have, ", "))
	}
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return fmt.Errorf("%w: --args %q: not JSON (want one object, e.g. {\"a\": 1})", ErrConfig, args)
	}
	reg, err := tools.NewRegistry([]tools.Tool{found})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	obs := reg.Call(ctx, found.Spec().Name, json.RawMessage(args))
	text := obs.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if _, err := io.WriteString(w, text); err != nil {
		return fmt.Errorf("write observation: %w", err)
	}
	if obs.Meta.Class != "" {
		return fmt.Errorf("%w (%s)", tools.ErrToolFailed, obs.Meta.Class)
	}
	return nil
}

func compactJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// simMCP starts the simulated world for a configuration whose tools.mcp
// names `url: sim`, as a --sim run does, so `mgrpo tool mcp` lists and
// calls the documented sim server; it returns the function that stops it.
func simMCP(c *Config, logger *slog.Logger) (func(), error) {
	if !slices.ContainsFunc(c.Tools.MCP, func(s MCPServerConfig) bool { return s.URL == SimMCPURL }) {
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
