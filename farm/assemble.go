package farm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
)

// stepPlan is one step's schedule: its tasks and their rollout tasks.
type stepPlan struct {
	step  int
	tasks []Task
	// units[q*K+k] is rollout k of tasks[q].
	units []rollout.RolloutTask
	// policyVersion is the planner's (single agent's) version and
	// executorVersion the executors', as the step was planned: its units
	// carry them, except those whose results a resumed run found stored,
	// which keep the versions they were sampled with.
	policyVersion, executorVersion int64
	// restarts counts the step's rollouts restarted at a weight update
	// (PartialRestart); nil when nobody counts.
	restarts *atomic.Int64
	// prior holds, by unit, the digest of an infra result a resumed run
	// found stored with retries left: the unit runs again as its next
	// retry. Nil or zero for the others.
	prior map[int]resultDigest
}

// planStep returns the schedule of step (1-based): the next batch tasks of
// the task list, wrapping around, each with group rollouts.
func planStep(run string, seed uint64, step, batch, group int, tasks []Task, version, executorVersion int64) stepPlan {
	p := stepPlan{step: step, policyVersion: version, executorVersion: executorVersion}
	first := (step - 1) * batch
	for i := range batch {
		t := tasks[(first+i)%len(tasks)]
		p.tasks = append(p.tasks, t)
		for k := range group {
			p.units = append(p.units, rollout.RolloutTask{
				Run: run, Step: step, QueryID: t.ID, K: k,
				Seed: rollout.RolloutSeed(seed, step, t.ID, k), PolicyVersion: version, ExecutorPolicyVersion: executorVersion,
			})
		}
	}
	return p
}

// assembly is what a step's results turn into, besides the files streamed
// out: the counters, the sample counts and the per-query statistics.
type assembly struct {
	counters          rollout.StepCounters
	planner, executor int
	stats             []rollout.QueryStats
	// excluded are the groups kept out of the batches (exclude).
	excluded []rollout.ExcludedGroup
}

// assembleStep groups a step's results by query (result q*K+k is rollout k
// of plan.tasks[q]), computes rewards' advantages and the alignment with
// ProcessGroup, and builds the samples, statistics and inspection lines, all
// in task and rollout order whatever order the rollouts finished in. It
// takes the results one query at a time and hands each query's files to
// emit, so a step never needs to be in memory whole; each result is also
// added to acc. With exclude, a group holding a rollout that is still an
// infra failure is excluded: its rollouts' inspection lines are written,
// but it has no samples and no statistics line, and it is counted.
func assembleStep(ctx context.Context, cfg rollout.GroupConfig, b rollout.SampleBuilder, plan stepPlan, group int, exclude bool,
	results stepResults, acc *summaryAcc, emit func(rollout.StepFiles) error) (assembly, error) {
	var out assembly
	rs := make([]*RolloutResult, group)
	for q, t := range plan.tasks {
		if exclude {
			ex, err := excludedGroup(ctx, plan, q, group, results, rs)
			if err != nil {
				return assembly{}, err
			}
			if ex != nil {
				files := rollout.StepFiles{Rollouts: make([]json.RawMessage, 0, group), RolloutsCompact: true}
				for k := range rs {
					acc.addResult(rs[k], true)
					line, err := inspectionRecord(t, rs[k])
					if err != nil {
						return assembly{}, fmt.Errorf("assemble step %d: encode %s: %w", plan.step, rs[k].describe(), err)
					}
					files.Rollouts = append(files.Rollouts, json.RawMessage(line))
				}
				if err := emit(files); err != nil {
					return assembly{}, err
				}
				out.excluded = append(out.excluded, *ex)
				clear(rs)
				continue
			}
		}
		in := rollout.GroupInput{QueryID: t.ID, Rollouts: make([]rollout.RolloutRewards, group)}
		tr := rollout.GroupTrajectories{Planner: make([]rollout.Trajectory, group), Executors: make([][]rollout.Trajectory, group)}
		for k := range rs {
			r := rs[k]
			if r == nil {
				var err error
				if r, err = groupResult(ctx, plan, q, k, group, results); err != nil {
					return assembly{}, err
				}
			}
			rs[k] = r
			acc.add(r)
			in.Rollouts[k].Main = r.Scores.Main
			tr.Planner[k] = sampleTrajectory(r.Tree.Planner, r.Planner, oldestTurnVersion(r.Tree.Planner, r.Task.PolicyVersion), r.Scores.FormatOK)
			if cfg.Mode == rollout.ModeSingle {
				// A single agent never delegates; the group has no sub side.
				continue
			}
			in.Rollouts[k].Subs = make([]float64, len(r.Scores.Subs))
			tr.Executors[k] = make([]rollout.Trajectory, len(r.Scores.Subs))
			for i, s := range r.Scores.Subs {
				in.Rollouts[k].Subs[i] = s.Reward
				tr.Executors[k][i] = sampleTrajectory(r.Tree.Executors[i], r.Executors[i], oldestTurnVersion(r.Tree.Executors[i], r.Task.ExecutorPolicyVersion), s.FormatOK)
			}
		}
		res, err := rollout.ProcessGroup(cfg, in)
		if err != nil {
			return assembly{}, fmt.Errorf("assemble step %d: %w", plan.step, err)
		}
		// The inspection lines come from json.Marshal.
		files := rollout.StepFiles{Stats: []rollout.QueryStats{res.Stats}, Rollouts: make([]json.RawMessage, 0, group), RolloutsCompact: true}
		if files.Planner, files.Executor, err = b.Build(res, tr); err != nil {
			return assembly{}, fmt.Errorf("assemble step %d: %w", plan.step, err)
		}
		for k := range rs {
			line, err := inspectionRecord(t, rs[k])
			if err != nil {
				return assembly{}, fmt.Errorf("assemble step %d: encode %s: %w", plan.step, rs[k].describe(), err)
			}
			files.Rollouts = append(files.Rollouts, json.RawMessage(line))
		}
		if err := emit(files); err != nil {
			return assembly{}, err
		}
		out.planner += len(files.Planner)
		out.executor += len(files.Executor)
		out.stats = append(out.stats, res.Stats)
		out.counters.Add(res)
		clear(rs)
	}
	return out, nil
}

// groupResult returns result k of query q of plan, checking its slot.
func groupResult(ctx context.Context, plan stepPlan, q, k, group int, results stepResults) (*RolloutResult, error) {
	t := plan.tasks[q]
	r, err := results.get(ctx, q*group+k)
	if err != nil {
		return nil, fmt.Errorf("assemble step %d: %w", plan.step, err)
	}
	if r.Task.QueryID != t.ID || r.Task.K != k {
		return nil, fmt.Errorf("assemble step %d: result %s in the slot of query %q rollout %d", plan.step, r.Task.ID(), t.ID, k)
	}
	return r, nil
}

// excludedGroup reads query q's results into rs and returns what excludes
// the group (its first infra rollout), nil when nothing does.
func excludedGroup(ctx context.Context, plan stepPlan, q, group int, results stepResults, rs []*RolloutResult) (*rollout.ExcludedGroup, error) {
	var ex *rollout.ExcludedGroup
	for k := range rs {
		r, err := groupResult(ctx, plan, q, k, group, results)
		if err != nil {
			return nil, err
		}
		rs[k] = r
		if ex == nil && r.infra() {
			ex = &rollout.ExcludedGroup{QueryID: plan.tasks[q].ID, Rollout: r.Task.ID(), Cause: r.FailureCause, Endpoint: r.FailureEndpoint}
		}
	}
	return ex, nil
}

// sampleTrajectory is what sample building needs of one trajectory. A
// missing trajectory counts as failed.
func sampleTrajectory(tr *agents.Trajectory, seqs TrajectoryResult, version int64, formatOK bool) rollout.Trajectory {
	out := rollout.Trajectory{Sequences: seqs.Sequences, PolicyVersion: version, FormatOK: formatOK, FinishReason: "error", Validated: seqs.validated}
	if tr != nil {
		out.FinishReason = tr.FinishReason()
		if n := len(tr.Turns); n > 0 && out.FinishReason == "stop" {
			// The last turn called tools (a trajectory cut by its turn
			// budget): say so, as each turn's reason does.
			out.FinishReason = turnFinishReason(tr.Turns[n-1])
		}
		out.NumTurns = len(tr.Turns)
	}
	return out
}
