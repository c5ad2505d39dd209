package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/mgrpo/mgrpo/tools"
)

// LiveToolbox is a role's toolbox when MCP servers give it tools: the
// built-in tools and the role's MCP tools in one registry, built again
// when a server announced a new tool list. Each rollout takes a snapshot
// at its start (the agents' Snapshotter, which the composition root
// adapts it to), so a change reaches the next rollout, never one in
// flight. Safe for concurrent use.
type LiveToolbox struct {
	set  *Set
	base []tools.Tool
	pick func(*Set) []tools.Tool
	log  *slog.Logger

	mu      sync.Mutex
	reg     *tools.Registry
	version int64
}

// NewLiveToolbox builds the toolbox of base (a registry of the built-in
// tools, whose options it keeps) and the tools pick takes from set.
func NewLiveToolbox(set *Set, base *tools.Registry, pick func(*Set) []tools.Tool, log *slog.Logger) (*LiveToolbox, error) {
	l := &LiveToolbox{set: set, base: base.Tools(), pick: pick, log: log, reg: base, version: -1}
	if err := l.rebuild(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *LiveToolbox) rebuild() error {
	v := l.set.Version()
	reg, err := l.reg.Rebuild(append(append([]tools.Tool(nil), l.base...), l.pick(l.set)...))
	if err != nil {
		return err
	}
	l.reg, l.version = reg, v
	return nil
}

func (l *LiveToolbox) current() *tools.Registry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reg
}

// Specs returns the current tools' specs.
func (l *LiveToolbox) Specs() []tools.Spec { return l.current().Specs() }

// Call calls one of the current tools.
func (l *LiveToolbox) Call(ctx context.Context, name string, args json.RawMessage) tools.Observation {
	return l.current().Call(ctx, name, args)
}

// Snapshot returns the tools a rollout starting now uses: when a server
// announced a new tool list, it is listed again and the registry rebuilt;
// a server that does not answer, or a list that cannot be offered, keeps
// the tools as they were (logged).
func (l *LiveToolbox) Snapshot(ctx context.Context) *tools.Registry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if changed := l.set.Changed(); len(changed) > 0 {
		if err := l.set.Refresh(ctx); err != nil {
			l.log.Warn("mcp: a server's new tool list is not used", "servers", changed, "err", err)
		}
	}
	if l.set.Version() != l.version {
		if err := l.rebuild(); err != nil {
			l.log.Warn("mcp: the new tool list is not used", "err", err)
		} else {
			l.log.Info("mcp: tool list changed; the next rollouts use it", "tools", l.reg.Names())
		}
	}
	return l.reg
}
