package farm

// The farm benchmarks' ideal latency: a rollout's critical path through
// the sim's modeled call latencies, recorded by a runner that wraps the
// measured one.

import (
	"context"
	"sync"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// timingRunner records each rollout's duration and its ideal latency: the
// sim's modeled latency (see simLatency) summed along the rollout's
// critical path (each planner turn, plus for each planner turn the slowest
// executor it started). When total rollouts have finished it calls
// onLast, so that a benchmark can read counters at the end of the rollout
// phase, before the step's files are written.
type timingRunner struct {
	inner  Runner
	lat    simLatency
	keep   bool
	total  int
	onLast func()

	mu                  sync.Mutex
	actual, ideal       time.Duration
	maxActual, maxIdeal time.Duration
	n                   int
	calls               int
	// callLatency sums every call's modeled latency, measured the latency
	// the client saw (Turn.Latency: the wait for an in-flight slot, the
	// round trip and decoding included).
	callLatency, measured time.Duration
	trees                 []*agents.Rollout
}

func (r *timingRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	start := time.Now()
	tree := r.inner.Run(ctx, task, t)
	took := time.Since(start)
	ideal := criticalLatency(tree, r.lat)
	calls, callLatency, measured := 0, time.Duration(0), time.Duration(0)
	for _, tr := range append([]*agents.Trajectory{tree.Planner}, tree.Executors...) {
		if tr != nil {
			calls += len(tr.Turns)
			callLatency += trajectoryLatency(tr, r.lat)
			for _, turn := range tr.Turns {
				measured += turn.Latency
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actual += took
	r.ideal += ideal
	r.maxActual, r.maxIdeal = max(r.maxActual, took), max(r.maxIdeal, ideal)
	r.calls += calls
	r.callLatency += callLatency
	r.measured += measured
	r.n++
	if r.keep && len(r.trees) < 64 {
		r.trees = append(r.trees, tree)
	}
	if r.n == r.total && r.onLast != nil {
		r.onLast()
	}
	return tree
}

// trajectoryLatency is the modeled latency of a trajectory's model calls
// one after another.
func trajectoryLatency(tr *agents.Trajectory, lat simLatency) time.Duration {
	var d time.Duration
	for _, turn := range tr.Turns {
		d += turnLatency(turn, lat)
	}
	return d
}

// turnLatency is the modeled latency of one model call.
func turnLatency(turn *llm.Turn, lat simLatency) time.Duration {
	n := len(turn.CompletionIDs)
	if n == 0 {
		n = turn.Usage.CompletionTokens
	}
	return lat.of(n)
}

// criticalLatency is the modeled latency of a rollout's critical path:
// each planner turn, then the slowest of the executors that turn started
// (they run in parallel). Tool calls take no time in the ideal.
func criticalLatency(tree *agents.Rollout, lat simLatency) time.Duration {
	var d time.Duration
	for i, turn := range tree.Planner.Turns {
		d += turnLatency(turn, lat)
		var slowest time.Duration
		if i < len(tree.Planner.Steps) {
			for _, c := range tree.Planner.Steps[i].Calls {
				if c.Executor >= 0 && c.Executor < len(tree.Executors) && tree.Executors[c.Executor] != nil {
					slowest = max(slowest, trajectoryLatency(tree.Executors[c.Executor], lat))
				}
			}
		}
		d += slowest
	}
	return d
}
