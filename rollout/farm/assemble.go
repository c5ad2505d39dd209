package farm

import (
	"encoding/json"
	"fmt"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
)

// stepPlan is one step's schedule: its tasks and their rollout tasks.
type stepPlan struct {
	step  int
	tasks []Task
	// units[q*K+k] is rollout k of tasks[q].
	units         []rollout.RolloutTask
	policyVersion int64
}

// planStep returns the schedule of step (1-based): the next batch tasks of
// the task list, wrapping around, each with group rollouts.
func planStep(run string, seed uint64, step, batch, group int, tasks []Task, version int64) stepPlan {
	p := stepPlan{step: step, policyVersion: version}
	first := (step - 1) * batch
	for i := range batch {
		t := tasks[(first+i)%len(tasks)]
		p.tasks = append(p.tasks, t)
		for k := range group {
			p.units = append(p.units, rollout.RolloutTask{
				Run: run, Step: step, QueryID: t.ID, K: k,
				Seed: rollout.RolloutSeed(seed, step, t.ID, k), PolicyVersion: version,
			})
		}
	}
	return p
}

// assembly is what a step's results turn into.
type assembly struct {
	files    rollout.StepFiles
	counters rollout.StepCounters
}

// assembleStep groups a step's results by query (results[q*K+k] is rollout k
// of plan.tasks[q]), computes rewards' advantages and the alignment with
// ProcessGroup, and builds the samples, statistics and inspection lines, all
// in task and rollout order whatever order the rollouts finished in.
func assembleStep(cfg rollout.GroupConfig, b rollout.SampleBuilder, plan stepPlan, group int, results []RolloutResult) (assembly, error) {
	var out assembly
	// Typically each rollout yields one planner and d̄ executor samples.
	out.files.Planner = make([]rollout.Sample, 0, len(results))
	out.files.Executor = make([]rollout.Sample, 0, len(results)*max(cfg.DBar, 0))
	out.files.Rollouts = make([]json.RawMessage, 0, len(results))
	// The inspection lines come from json.Marshal.
	out.files.RolloutsCompact = true
	for q, t := range plan.tasks {
		rs := results[q*group : (q+1)*group]
		in := rollout.GroupInput{QueryID: t.ID, Rollouts: make([]rollout.RolloutRewards, group)}
		tr := rollout.GroupTrajectories{Planner: make([]rollout.Trajectory, group), Executors: make([][]rollout.Trajectory, group)}
		for k := range rs {
			r := &rs[k]
			if r.Task.QueryID != t.ID || r.Task.K != k {
				return assembly{}, fmt.Errorf("assemble step %d: result %s in the slot of query %q rollout %d", plan.step, r.Task.ID(), t.ID, k)
			}
			in.Rollouts[k].Main = r.Scores.Main
			tr.Planner[k] = sampleTrajectory(r.Tree.Planner, r.Planner, r.Task.PolicyVersion, r.Scores.FormatOK)
			if cfg.Mode == rollout.ModeSingle {
				// A single agent never delegates; the group has no sub side.
				continue
			}
			in.Rollouts[k].Subs = make([]float64, len(r.Scores.Subs))
			tr.Executors[k] = make([]rollout.Trajectory, len(r.Scores.Subs))
			for i, s := range r.Scores.Subs {
				in.Rollouts[k].Subs[i] = s.Reward
				tr.Executors[k][i] = sampleTrajectory(r.Tree.Executors[i], r.Executors[i], r.Task.PolicyVersion, s.FormatOK)
			}
		}
		res, err := rollout.ProcessGroup(cfg, in)
		if err != nil {
			return assembly{}, fmt.Errorf("assemble step %d: %w", plan.step, err)
		}
		planner, executor, err := b.Build(res, tr)
		if err != nil {
			return assembly{}, fmt.Errorf("assemble step %d: %w", plan.step, err)
		}
		out.files.Planner = append(out.files.Planner, planner...)
		out.files.Executor = append(out.files.Executor, executor...)
		out.files.Stats = append(out.files.Stats, res.Stats)
		out.counters.Add(res)
		for k := range rs {
			line, err := inspectionRecord(t, &rs[k])
			if err != nil {
				return assembly{}, fmt.Errorf("assemble step %d: encode %s: %w", plan.step, rs[k].describe(), err)
			}
			out.files.Rollouts = append(out.files.Rollouts, json.RawMessage(line))
		}
	}
	return out, nil
}

// sampleTrajectory is what sample building needs of one trajectory. A
// missing trajectory counts as failed.
func sampleTrajectory(tr *agents.Trajectory, seqs TrajectoryResult, version int64, formatOK bool) rollout.Trajectory {
	out := rollout.Trajectory{Sequences: seqs.Sequences, PolicyVersion: version, FormatOK: formatOK, FinishReason: "error", Validated: seqs.validated}
	if tr != nil {
		out.FinishReason = tr.FinishReason()
		out.NumTurns = len(tr.Turns)
	}
	return out
}
