// Package farm is the rollout farm's runtime: it runs the agents on tasks
// and turns their trajectories into the plain values of package rollout (the
// pure M-GRPO layer), which then scores, aligns and writes them.
//
// A [Farm] runs the steps of a run. Step s takes the next B tasks of the
// task list (wrapping around) and schedules B×K [rollout.RolloutTask] units, each
// with a stable id (run/step/query/k) and its own seed ([rollout.RolloutSeed]), with
// at most [Config.Concurrency] rollouts in flight across the whole step.
// [Execute] carries out one unit: the [Runner] (an [AgentRunner] around the
// planner or the single agent) produces the rollout tree, the turns of each
// trajectory are assembled into token sequences, and [Scoring] computes
// r_correct, R_M and each executor's R_S. A failure is data: a planner
// error, a runner panic or turns that form no sequences are recorded in the
// [RolloutResult], which scores 0 with invalid format; a scorer or judge
// error is recorded and counts as 0. Units and results are plain
// serialisable values, so that workers elsewhere can carry them out.
//
// Once every result of a step is in, the farm resolves d̄ (fixed; or auto:
// the quantile of the previous step's d_k, or of this step's own for the
// first step, the calibration pass), groups the results by query in task
// and rollout order whatever order they finished in, runs [rollout.ProcessGroup]
// and [rollout.SampleBuilder.Build], and writes planner.jsonl, executor.jsonl,
// stats.jsonl and rollouts.jsonl through the [rollout.Sink]. rollouts.jsonl holds
// each tree with its scores and errors, without what depends on timing or
// scheduling (times, latencies, endpoints, cache hits, random tool call
// ids) and without token ids, so that the same seed writes the same bytes.
//
// The runtime is one step pipeline ([Farm.Run], pipeline.go): open the run,
// restore training, then for each step the step policy (policy.go: fixed
// steps, steps overlapped by Training.MaxStaleness; stream.go: streamed
// groups) forms the step, the dispatcher (dispatch.go: in process on the
// farm's bounded pool, or through the store's queue by workers) runs its
// units, and the pipeline assembles, writes and trains it.
//
// When the run's context is cancelled, no further rollout starts, rollouts
// in flight get [Config.Grace] to finish and are then cancelled and
// abandoned; a step that did not complete writes nothing.
package farm
