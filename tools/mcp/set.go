package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/cache"
)

// Config is the MCP servers of a process.
type Config struct {
	Servers []ServerConfig
	// Reserved are names already offered to the model (the built-in
	// tools): an MCP tool of that name is prefixed, or with PrefixNever a
	// configuration error.
	Reserved []string
	// Cache serves the tools whose policy allows caching; CacheTTL is the
	// lifetime of their entries (0: the cache's default).
	Cache    cache.Cache
	CacheTTL time.Duration
	// Logger receives restarts (nil: discarded).
	Logger *slog.Logger
}

// ConfigError is a configuration the servers' answers make unusable (an
// allowed tool the server does not list, two tools offered under one
// name). Key names the server's setting that fixes it.
type ConfigError struct {
	Server string
	Key    string
	Msg    string
}

// ServerError is a server that did not start or did not list its tools.
type ServerError struct {
	Server string
	Err    error
}

func (e *ServerError) Error() string { return e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

func (e *ConfigError) Error() string {
	return fmt.Sprintf("mcp server %s: %s: %s", e.Server, e.Key, e.Msg)
}

// Set is the MCP servers of a process and their allowed tools. Close stops
// them. Safe for concurrent use.
type Set struct {
	servers []*server
	cfg     Config

	mu      sync.Mutex
	lists   [][]*sdk.Tool
	tools   []*Tool
	version int64 // counts the tool sets built (1 after Open)
}

// Open starts every server, lists its tools and builds the offered tools:
// the preflight of MCP. A server that does not start or does not list its
// tools is an error naming it (with a stdio server's stderr's last lines);
// the servers' tool lists that cannot be offered are *ConfigError. On
// error every started server is stopped.
func Open(ctx context.Context, cfg Config) (*Set, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	set := &Set{cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			set.Close()
		}
	}()
	seen := map[string]bool{}
	for _, sc := range cfg.Servers {
		if err := sc.Validate(); err != nil {
			return nil, &ServerError{Server: sc.Name, Err: fmt.Errorf("mcp server %s: %w", sc.Name, err)}
		}
		if seen[sc.Name] {
			return nil, &ConfigError{Server: sc.Name, Key: "name", Msg: "two servers have this name"}
		}
		seen[sc.Name] = true
		set.servers = append(set.servers, newServer(sc, log))
	}
	// Start the servers in parallel: npx-started ones take seconds each.
	lists := make([][]*sdk.Tool, len(set.servers))
	errs := make([]error, len(set.servers))
	done := make(chan int)
	for i, s := range set.servers {
		go func() {
			lctx, cancel := context.WithTimeout(ctx, s.cfg.startTimeout())
			defer cancel()
			lists[i], errs[i] = s.listTools(lctx)
			if errs[i] != nil {
				errs[i] = &ServerError{Server: s.cfg.Name, Err: errs[i]}
			}
			done <- i
		}()
	}
	for range set.servers {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var err error
	if set.tools, err = offer(set.servers, lists, cfg); err != nil {
		return nil, err
	}
	set.lists, set.version = lists, 1
	ok = true
	return set, nil
}

// offer applies each server's allow-list and prefix rule to its listed
// tools and builds the Tools, sorted by offered name.
func offer(servers []*server, lists [][]*sdk.Tool, cfg Config) ([]*Tool, error) {
	type cand struct {
		srv  *server
		tool *sdk.Tool
	}
	var cands []cand
	count := map[string]int{}
	for _, r := range cfg.Reserved {
		count[r]++
	}
	for i, s := range servers {
		listed := map[string]*sdk.Tool{}
		for _, t := range lists[i] {
			listed[t.Name] = t
		}
		names := s.cfg.Allow
		if len(names) == 0 {
			for _, t := range lists[i] {
				names = append(names, t.Name)
			}
		}
		for _, n := range names {
			t, ok := listed[n]
			if !ok {
				have := make([]string, 0, len(listed))
				for k := range listed {
					have = append(have, k)
				}
				sort.Strings(have)
				return nil, &ConfigError{Server: s.cfg.Name, Key: "allow", Msg: fmt.Sprintf("%q is not a tool of this server (it lists %s)", n, strings.Join(have, ", "))}
			}
			cands = append(cands, cand{s, t})
			count[n]++
		}
		for n := range s.cfg.PerTool {
			if _, ok := listed[n]; !ok {
				return nil, &ConfigError{Server: s.cfg.Name, Key: "tools." + n, Msg: "not a tool of this server"}
			}
		}
	}
	var out []*Tool
	taken := map[string]string{}
	for _, r := range cfg.Reserved {
		taken[r] = "the built-in tool"
	}
	for _, c := range cands {
		name := c.tool.Name
		switch c.srv.cfg.Prefix {
		case PrefixAlways:
			name = c.srv.cfg.Name + "_" + name
		case PrefixNever:
		default:
			if count[name] > 1 {
				name = c.srv.cfg.Name + "_" + name
			}
		}
		if by, dup := taken[name]; dup {
			return nil, &ConfigError{Server: c.srv.cfg.Name, Key: "prefix", Msg: fmt.Sprintf("tool %q collides with %s %q (set prefix: always or auto, or leave one out of allow)", name, by, name)}
		}
		taken[name] = "the tool of mcp server " + c.srv.cfg.Name
		t, err := newTool(c.srv, c.tool, name, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out, nil
}

func newTool(s *server, t *sdk.Tool, name string, cfg Config) (*Tool, error) {
	schema := t.InputSchema
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	params, err := json.Marshal(schema)
	if err != nil {
		return nil, &ConfigError{Server: s.cfg.Name, Key: "tools." + t.Name, Msg: fmt.Sprintf("input schema: %v", err)}
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	timeout, conc, cacheable := s.cfg.policy(t.Name)
	maxChars := s.cfg.MaxChars
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	tool := &Tool{srv: s, remote: t.Name, spec: tools.Spec{Name: name, Description: desc, Parameters: params},
		timeout: timeout, slots: semaphore.NewWeighted(int64(conc)), cacheTTL: cfg.CacheTTL, maxChars: maxChars}
	if cacheable {
		tool.cache = cfg.Cache
	}
	return tool, nil
}

// Tools returns the offered tools, sorted by name, as tools.Tool values
// for a registry.
func (s *Set) Tools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]tools.Tool, len(s.tools))
	for i, t := range s.tools {
		out[i] = t
	}
	return out
}

// MCPTools returns the offered tools with their server-side names.
func (s *Set) MCPTools() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Version counts the tool sets the Set has offered: 1 after Open, one more
// after each Refresh that changed them.
func (s *Set) Version() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Refresh lists again the tools of the servers that announced a change
// and, when the offered tools differ, builds them anew (Version grows).
// Tools already handed out keep working. On an error (a server that does
// not answer, a new list that cannot be offered) the offered tools stay as
// they were. Callers refresh between rollouts, never during one.
func (s *Set) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lists := slices.Clone(s.lists)
	changed := false
	for i, srv := range s.servers {
		if !srv.changed.Load() {
			continue
		}
		l, err := srv.listTools(ctx)
		if err != nil {
			return err
		}
		lists[i], changed = l, true
	}
	if !changed {
		return nil
	}
	next, err := offer(s.servers, lists, s.cfg)
	if err != nil {
		return err
	}
	s.lists = lists
	if !sameTools(s.tools, next) {
		s.tools = next
		s.version++
	}
	return nil
}

// sameTools reports whether two tool sets offer the same specs.
func sameTools(a, b []*Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].spec, b[i].spec
		if x.Name != y.Name || x.Description != y.Description || string(x.Parameters) != string(y.Parameters) || a[i].remote != b[i].remote {
			return false
		}
	}
	return true
}

// Changed reports the servers that announced a change of their tool list
// since they were last listed (notifications/tools/list_changed); Refresh
// picks the changes up.
func (s *Set) Changed() []string {
	var out []string
	for _, srv := range s.servers {
		if srv.changed.Load() {
			out = append(out, srv.cfg.Name)
		}
	}
	return out
}

// Starts returns how many sessions the named server has started (1 after
// Open; more after restarts); 0 for an unknown server.
func (s *Set) Starts(server string) int64 {
	for _, srv := range s.servers {
		if srv.cfg.Name == server {
			return srv.starts.Load()
		}
	}
	return 0
}

// Close stops every server. It is idempotent.
func (s *Set) Close() {
	for _, srv := range s.servers {
		srv.close()
	}
}
