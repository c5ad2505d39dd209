package farm

import "context"

// dispatcher is where a step's rollouts run: in this process on the farm's
// pool (inProcess), or handed out through the store's queue to workers
// (queued). It is chosen once, in New, from Config.Queue.
type dispatcher interface {
	// dispatch carries out every rollout of plan not in finished (the
	// results a resumed run found stored, by plan index), its results
	// going to results or to the store as each finishes, and returns the
	// digests of all of plan's rollouts in plan order. When ctx ends, no
	// further rollout starts and it returns an error wrapping ctx's cause
	// unless the step completed anyway. It is called from one goroutine
	// per step; steps that overlap call it concurrently.
	dispatch(ctx context.Context, plan stepPlan, results stepResults, finished map[int]resultDigest) ([]resultDigest, error)
}

// dispatcherFor returns f's dispatcher for cfg: queued with Config.Queue,
// else inProcess.
func dispatcherFor(cfg Config, f *Farm) dispatcher {
	if cfg.Queue {
		return queued{f}
	}
	return inProcess{f}
}

// inProcess runs a step's rollouts in this process, at most
// Config.Concurrency at once across the steps in flight (runUnits).
type inProcess struct{ f *Farm }

func (d inProcess) dispatch(ctx context.Context, plan stepPlan, results stepResults, finished map[int]resultDigest) ([]resultDigest, error) {
	return d.f.runUnits(ctx, plan, results, finished)
}

// queued enqueues a step's rollouts in the store's queue for `mgrpo
// worker` processes and Config.Concurrency local ones, and waits for their
// results (runQueued); results are the store's.
type queued struct{ f *Farm }

func (d queued) dispatch(ctx context.Context, plan stepPlan, _ stepResults, finished map[int]resultDigest) ([]resultDigest, error) {
	return d.f.runQueued(ctx, plan, finished)
}
