package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/mcp"
)

// ToolsConfig configures tools beyond the built-in search and visit.
type ToolsConfig struct {
	MCP []MCPServerConfig `yaml:"mcp" doc:"MCP servers whose tools the agents get beside search and visit: a list of {name, command+args+env (stdio) or url+headers (Streamable HTTP), allow, prefix, timeout, concurrency, cache, max_chars, roles, tools} (docs/tools.md)"`
}

// MCPServerConfig is one MCP server of tools.mcp. Values of env and headers
// may name environment variables as ${NAME}, read when the run starts, so
// that secrets stay out of the file.
type MCPServerConfig struct {
	Name    string            `yaml:"name"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Allow lists the tools offered (empty: all the server lists).
	Allow         []string `yaml:"allow"`
	Prefix        string   `yaml:"prefix"`
	MCPToolPolicy `yaml:",inline"`
	MaxChars      int      `yaml:"max_chars"`
	StartTimeout  Duration `yaml:"start_timeout"`
	// Roles get the server's tools: executor (default), planner, single.
	Roles []string                 `yaml:"roles"`
	Tools map[string]MCPToolPolicy `yaml:"tools"`
}

// MCPToolPolicy is how a server's tools (or one of them) are called.
type MCPToolPolicy struct {
	Timeout     Duration `yaml:"timeout"`
	Concurrency int      `yaml:"concurrency"`
	Cache       *bool    `yaml:"cache"`
}

// The roles that may get MCP tools.
const (
	mcpRoleExecutor = "executor"
	mcpRolePlanner  = "planner"
	mcpRoleSingle   = "single"
)

// SimMCPURL is the url of tools.mcp that names the simulated world's MCP
// server (with sim).
const SimMCPURL = "sim"

// mcpKey names one server's key in errors: tools.mcp.NAME.KEY, or
// tools.mcp[I].KEY when the entry has no usable name.
func (c Config) mcpKey(i int, key string) string {
	base := fmt.Sprintf("tools.mcp[%d]", i)
	if s := c.Tools.MCP[i]; s.Name != "" && validMCPName(s.Name) {
		base = "tools.mcp." + s.Name
	}
	if key == "" {
		return base
	}
	return base + "." + key
}

var (
	// mcpName is a server name's rule, ^[a-zA-Z0-9_-]{1,40}$, with the
	// length (validMCPName) checked apart: a counted repetition compiles
	// into 40 copies of the class at every process's start.
	mcpName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	envRef  = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// validMCPName reports whether name is a valid MCP server name.
func validMCPName(name string) bool { return len(name) <= 40 && mcpName.MatchString(name) }

// checkMCP reports what makes tools.mcp unusable without contacting a
// server: a missing or repeated name, neither or both of command and url,
// a command that is not found, an unknown prefix rule or role, negative
// limits, a url of sim without --sim.
func (c Config) checkMCP(p *problems) {
	seen := map[string]bool{}
	for i, s := range c.Tools.MCP {
		key := func(k string) string { return c.mcpKey(i, k) }
		switch {
		case s.Name == "":
			p.add(key("name"), "", "required: the server's name (prefixes, metrics, prices)")
		case !validMCPName(s.Name):
			p.add(key("name"), "", "%q: want 1 to 40 letters, digits, _ or -", s.Name)
		case seen[s.Name]:
			p.add(key("name"), "", "%q: two servers have this name", s.Name)
		}
		seen[s.Name] = true
		switch {
		case s.Command == "" && s.URL == "":
			p.add(key("command"), "", "required (or url): the command of a stdio server, or the url of a Streamable HTTP one")
		case s.Command != "" && s.URL != "":
			p.add(key("url"), "", "command and url both set: give one")
		case s.Command != "":
			if len(s.Headers) > 0 {
				p.add(key("headers"), "", "only for a url (Streamable HTTP) server")
			}
		case s.URL == SimMCPURL:
			if !c.Sim {
				p.add(key("url"), "", "sim needs --sim (the simulated world serves the MCP server)")
			}
		case !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			p.add(key("url"), "", "%q: want an http:// or https:// URL (or sim with --sim)", s.URL)
		}
		if !slices.Contains([]string{"", mcp.PrefixAuto, mcp.PrefixAlways, mcp.PrefixNever}, s.Prefix) {
			p.add(key("prefix"), "", "%q: want auto (prefix a taken name with the server's), always or never", s.Prefix)
		}
		for _, r := range s.Roles {
			if !slices.Contains([]string{mcpRoleExecutor, mcpRolePlanner, mcpRoleSingle}, r) {
				p.add(key("roles"), "", "%q: want executor, planner or single", r)
			}
		}
		pol := map[string]MCPToolPolicy{"": s.MCPToolPolicy}
		for n, tp := range s.Tools {
			pol["tools."+n+"."] = tp
		}
		for at, tp := range pol {
			if tp.Timeout.Duration < 0 {
				p.add(key(at+"timeout"), "", "%v: must not be negative (0: 60s)", tp.Timeout.Duration)
			}
			if tp.Concurrency < 0 {
				p.add(key(at+"concurrency"), "", "%d: must not be negative (0: 8)", tp.Concurrency)
			}
		}
		if s.MaxChars < 0 {
			p.add(key("max_chars"), "", "%d: must not be negative (0: 30000)", s.MaxChars)
		}
	}
	keys := make([]string, 0, len(c.Prices.MCPCall))
	for k := range c.Prices.MCPCall {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		server, _, _ := strings.Cut(k, ".")
		if !seen[server] {
			p.add("prices.mcp_call."+k, "", "names no server of tools.mcp (unknown server %q)", server)
		}
	}
}

// checkMCPEnv reports what of tools.mcp this machine cannot serve, checked
// when the servers start (so that a file validates anywhere): a command
// that is not found, a ${NAME} of env or headers that is not set.
func (c Config) checkMCPEnv() error {
	var p problems
	for i, s := range c.Tools.MCP {
		key := func(k string) string { return c.mcpKey(i, k) }
		if s.Command != "" {
			if _, err := exec.LookPath(s.Command); err != nil {
				p.add(key("command"), "", "%q: not found (%v)", s.Command, err)
			}
		}
		for _, m := range []struct {
			k string
			v map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} {
			for name, v := range m.v {
				for _, ref := range envRef.FindAllStringSubmatch(v, -1) {
					if _, ok := os.LookupEnv(ref[1]); !ok {
						p.add(key(m.k+"."+name), "", "names ${%s}, which is not set in the environment", ref[1])
					}
				}
			}
		}
	}
	return errors.Join(p...)
}

// mcpRoles returns the roles of server s (executor by default).
func (s MCPServerConfig) mcpRoles() []string {
	if len(s.Roles) == 0 {
		return []string{mcpRoleExecutor}
	}
	return s.Roles
}

// mcpServers turns tools.mcp into the servers' configurations, reading the
// ${NAME} references of env and headers from the environment (url sim is
// the world's address by now: StartSim put it there).
// A stdio server's environment is PATH, HOME, TMPDIR,
// LANG and USER of this process plus its env: the run's own secrets do not
// leak to it.
func (c Config) mcpServers() []mcp.ServerConfig {
	var out []mcp.ServerConfig
	for _, s := range c.Tools.MCP {
		sc := mcp.ServerConfig{Name: s.Name, Command: s.Command, Args: s.Args, URL: s.URL, Allow: s.Allow, Prefix: s.Prefix,
			Policy: s.MCPToolPolicy.policy(), MaxChars: s.MaxChars, StartTimeout: s.StartTimeout.Duration}
		expand := func(v string) string {
			return envRef.ReplaceAllStringFunc(v, func(m string) string { return os.Getenv(envRef.FindStringSubmatch(m)[1]) })
		}
		if s.Command != "" {
			for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "USER"} {
				if v, ok := os.LookupEnv(k); ok {
					sc.Env = append(sc.Env, k+"="+v)
				}
			}
			keys := make([]string, 0, len(s.Env))
			for k := range s.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				sc.Env = append(sc.Env, k+"="+expand(s.Env[k]))
			}
		}
		if len(s.Headers) > 0 {
			sc.Headers = map[string]string{}
			for k, v := range s.Headers {
				sc.Headers[k] = expand(v)
			}
		}
		if len(s.Tools) > 0 {
			sc.PerTool = map[string]mcp.ToolPolicy{}
			for n, tp := range s.Tools {
				sc.PerTool[n] = tp.policy()
			}
		}
		out = append(out, sc)
	}
	return out
}

func (p MCPToolPolicy) policy() mcp.ToolPolicy {
	return mcp.ToolPolicy{Timeout: p.Timeout.Duration, Concurrency: p.Concurrency, Cache: p.Cache}
}

// mcpReserved returns the names the built-in agents' tools already have.
func mcpReserved() []string {
	return []string{"search", "visit", agents.ToolDelegate, agents.ToolReason}
}

// openMCP starts the servers of tools.mcp and lists their tools (the MCP
// preflight): a server that does not start or list its tools, and a tool
// list that cannot be offered, are configuration errors naming the
// server's key, with a stdio server's stderr's last lines.
func openMCP(ctx context.Context, c Config, shared cache.Cache, log *slog.Logger) (*mcp.Set, error) {
	if err := c.checkMCPEnv(); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrConfig, err)
	}
	lru := cache.NewLRU(10000, time.Hour)
	var cc cache.Cache = lru
	if shared != nil {
		cc = cache.NewTiered(cache.TieredConfig{Local: lru, Shared: shared, Namespace: cacheScope(c) + "\x00mcp", TTL: time.Hour})
	}
	set, err := mcp.Open(ctx, mcp.Config{Servers: c.mcpServers(), Reserved: mcpReserved(), Cache: cc, Logger: log})
	if err == nil {
		return set, nil
	}
	index := func(server string) int {
		return slices.IndexFunc(c.Tools.MCP, func(s MCPServerConfig) bool { return s.Name == server })
	}
	var ce *mcp.ConfigError
	if errors.As(err, &ce) && index(ce.Server) >= 0 {
		return nil, fmt.Errorf("%w: %s: %s", ErrConfig, c.mcpKey(index(ce.Server), ce.Key), ce.Msg)
	}
	var lines []string
	for _, e := range unjoin(err) {
		var se *mcp.ServerError
		if errors.As(e, &se) && index(se.Server) >= 0 {
			lines = append(lines, fmt.Sprintf("%s: did not start or list its tools: %v", c.mcpKey(index(se.Server), ""), se.Err))
			continue
		}
		lines = append(lines, "tools.mcp: "+e.Error())
	}
	return nil, fmt.Errorf("%w: before starting, an MCP server failed:\n%s", ErrConfig, strings.Join(lines, "\n"))
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// mcpTools returns the tools of set whose servers give them to role.
func (c Config) mcpTools(set *mcp.Set, role string) []tools.Tool {
	if set == nil {
		return nil
	}
	give := map[string]bool{}
	for _, s := range c.Tools.MCP {
		give[s.Name] = slices.Contains(s.mcpRoles(), role)
	}
	var out []tools.Tool
	for _, t := range set.MCPTools() {
		if give[t.Server()] {
			out = append(out, t)
		}
	}
	return out
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
