package farm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/mgrpo/mgrpo/agents"
)

// PartialRollouts says what becomes of the rollouts in flight when a
// weight update reaches the servers (asynchronous training).
type PartialRollouts string

const (
	// PartialContinue lets them go on with the new weights: each turn
	// records the version the server reported for it, and each sample the
	// oldest of its trajectory's. The default.
	PartialContinue PartialRollouts = "continue"
	// PartialRestart cancels them at the update and runs them again from
	// scratch once the new weights serve, their partial work discarded
	// (counted in the step's RestartedRollouts).
	PartialRestart PartialRollouts = "restart"
)

// StalePolicy says what becomes of samples whose policy version is more
// than the max staleness behind the trainer that trains them.
type StalePolicy string

const (
	// StaleDrop leaves the query's whole group out of that role's batch
	// (group-relative advantages are only meaningful over the group the
	// rewards were normalised over, and a group with a hole would
	// renormalise differently from the step files). The default: the
	// bound then holds for every trained token.
	StaleDrop StalePolicy = "drop"
	// StaleKeep trains them anyway; they are counted.
	StaleKeep StalePolicy = "keep"
)

// ParsePartialRollouts returns the policy named s ("" is continue).
func ParsePartialRollouts(s string) (PartialRollouts, error) {
	switch p := PartialRollouts(s); p {
	case "":
		return PartialContinue, nil
	case PartialContinue, PartialRestart:
		return p, nil
	}
	return "", fmt.Errorf("partial rollouts %q: want continue or restart", s)
}

// ParseStalePolicy returns the policy named s ("" is drop).
func ParseStalePolicy(s string) (StalePolicy, error) {
	switch p := StalePolicy(s); p {
	case "":
		return StaleDrop, nil
	case StaleDrop, StaleKeep:
		return p, nil
	}
	return "", fmt.Errorf("stale policy %q: want drop or keep", s)
}

// errRestartAtUpdate is the cause a weight update cancels an in-flight
// rollout with under PartialRestart.
var errRestartAtUpdate = errors.New("restarted at a weight update")

// restartGate tracks the rollouts in flight under PartialRestart: an
// update cancels them all and holds new starts until it ends, so every
// rollout that runs to its end ran on one version of the weights (unless
// a role was synced by its trainer without the farm knowing). The zero
// value is ready; it is safe for concurrent use.
type restartGate struct {
	mu       sync.Mutex
	next     int
	running  map[int]context.CancelCauseFunc
	updating int
	open     chan struct{} // closed while updating == 0; nil: never closed yet
}

// begin waits until no update is in progress, then registers a rollout
// and returns its context (cancelled with errRestartAtUpdate by the next
// update) and the id to end it with.
func (g *restartGate) begin(ctx context.Context) (context.Context, int, error) {
	for {
		g.mu.Lock()
		if g.updating == 0 {
			if g.running == nil {
				g.running = map[int]context.CancelCauseFunc{}
			}
			rctx, cancel := context.WithCancelCause(ctx)
			g.next++
			id := g.next
			g.running[id] = cancel
			g.mu.Unlock()
			return rctx, id, nil
		}
		open := g.open
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, 0, context.Cause(ctx)
		case <-open:
		}
	}
}

// end unregisters rollout id.
func (g *restartGate) end(id int) {
	g.mu.Lock()
	cancel := g.running[id]
	delete(g.running, id)
	g.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// beginUpdate cancels the rollouts in flight and holds new ones until the
// matching endUpdate; it returns how many it cancelled. Updates of two
// roles may overlap: starts resume when the last one ends.
func (g *restartGate) beginUpdate() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.updating == 0 {
		g.open = make(chan struct{})
	}
	g.updating++
	n := len(g.running)
	for id, cancel := range g.running {
		cancel(errRestartAtUpdate)
		delete(g.running, id)
	}
	return n
}

// endUpdate ends an update begun with beginUpdate.
func (g *restartGate) endUpdate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.updating--
	if g.updating == 0 {
		close(g.open)
	}
}

// oldestTurnVersion returns the oldest weight version among tr's turns as
// the servers reported them; a turn without a numeric report (a server
// that reports none, or its initial "default" weights) counts as
// scheduled, the version its rollout was scheduled with, as does a
// trajectory without turns.
func oldestTurnVersion(tr *agents.Trajectory, scheduled int64) int64 {
	if tr == nil || len(tr.Turns) == 0 {
		return scheduled
	}
	var oldest int64
	for i, t := range tr.Turns {
		v := scheduled
		if t != nil {
			if n, err := strconv.ParseInt(t.WeightVersion, 10, 64); err == nil {
				v = n
			}
		}
		if i == 0 || v < oldest {
			oldest = v
		}
	}
	return oldest
}
