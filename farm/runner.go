package farm

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// Runner carries out one rollout task. Implementations must be safe for
// concurrent use. Run always returns a tree: failures are recorded in its
// trajectories (a planner Error), never returned; a cancelled context ends
// the rollout early with a partial tree.
type Runner interface {
	Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout
}

// AgentRunner runs rollouts with the project's agents: a Planner (modes
// mgrpo and frozen-sub) or a Single agent (mode single). Exactly one of the
// two is set.
type AgentRunner struct {
	Planner *agents.Planner
	Single  *agents.Single
}

var _ Runner = (*AgentRunner)(nil)

// Run runs the planner or single agent on t's question with the task's id
// as stickiness key and the task's seed.
func (r *AgentRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	q := agents.Query{Key: task.ID(), Question: t.Question, Seed: task.Seed}
	if r.Single != nil {
		return r.Single.Run(ctx, q)
	}
	return r.Planner.Run(ctx, q)
}

// validateFor checks that the runner has the agent mode needs.
func (r *AgentRunner) validateFor(mode rollout.Mode) error {
	switch {
	case r.Planner != nil && r.Single != nil:
		return errors.New("Runner: AgentRunner has both a Planner and a Single agent; set exactly one")
	case mode == rollout.ModeSingle && r.Single == nil:
		return errors.New("Runner: mode single needs an AgentRunner with a Single agent (agents.NewSingle)")
	case mode != rollout.ModeSingle && r.Planner == nil:
		return fmt.Errorf("Runner: mode %s needs an AgentRunner with a Planner (agents.NewPlanner)", mode)
	}
	return nil
}

// Execute carries out one unit of work: it runs task with runner, derives
// the trajectories' token sequences and scores the rollout. It never fails:
// a runner that panics or returns no tree, a planner error and turns that
// form no sequences are all recorded in the result. This is the whole of
// what a worker does with a task; the farm calls it for every unit.
func Execute(ctx context.Context, runner Runner, scoring Scoring, task rollout.RolloutTask, t Task) RolloutResult {
	res := RolloutResult{Task: task}
	res.Tree, res.Error = runSafely(ctx, runner, task, t)
	runnerFailed := res.Error != "" || res.Tree.Planner == nil
	if res.Tree.Planner == nil {
		res.Tree.Planner = &agents.Trajectory{Role: agents.RolePlanner, Task: t.Question, Error: "runner returned no planner trajectory"}
	}
	if res.Error == "" && res.Tree.Planner.Error != "" {
		res.Error = res.Tree.Planner.Error
	}
	res.Planner = trajectorySequences(res.Tree.Planner)
	if res.Error == "" && res.Planner.SequenceError != "" {
		res.Error = "planner: " + res.Planner.SequenceError
	}
	res.Executors = make([]TrajectoryResult, len(res.Tree.Executors))
	for i, e := range res.Tree.Executors {
		res.Executors[i] = trajectorySequences(e)
	}
	res.Tree = withoutPromptIDs(res.Tree)
	scored := time.Now()
	scoring.Score(ctx, t, &res)
	res.ScoringSeconds = time.Since(scored).Seconds()
	classify(&res, runnerFailed)
	return res
}

// withoutPromptIDs returns a copy of tree whose turns carry no prompt token
// ids (see llm.Turn.WithoutPromptIDs). Once the sequences are assembled they
// hold every prompt token, and the turns' ids would keep every array their
// trajectory outgrew alive until the step ends. The runner's tree is left
// as it was.
func withoutPromptIDs(tree *agents.Rollout) *agents.Rollout {
	return mapTurns(tree, (*llm.Turn).WithoutPromptIDs)
}

// mapTurns returns a copy of tree whose turns are f of the tree's (nil
// turns stay nil); the tree is left as it was.
func mapTurns(tree *agents.Rollout, f func(*llm.Turn) *llm.Turn) *agents.Rollout {
	trajectory := func(tr *agents.Trajectory) *agents.Trajectory {
		if tr == nil {
			return nil
		}
		c := *tr
		c.Turns = make([]*llm.Turn, len(tr.Turns))
		for i, t := range tr.Turns {
			if t != nil {
				c.Turns[i] = f(t)
			}
		}
		return &c
	}
	c := *tree
	c.Planner = trajectory(tree.Planner)
	c.Executors = make([]*agents.Trajectory, len(tree.Executors))
	for i, e := range tree.Executors {
		c.Executors[i] = trajectory(e)
	}
	return &c
}

// runSafely calls the runner, turning a panic or a nil tree into an error.
func runSafely(ctx context.Context, runner Runner, task rollout.RolloutTask, t Task) (tree *agents.Rollout, failure string) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			tree = &agents.Rollout{Question: t.Question, Started: start, Duration: time.Since(start)}
			failure = fmt.Sprintf("runner panicked: %v\n%s", p, debug.Stack())
		}
	}()
	tree = runner.Run(ctx, task, t)
	if tree == nil {
		return &agents.Rollout{Question: t.Question, Started: start, Duration: time.Since(start)}, "runner returned no rollout"
	}
	return tree, ""
}

// trajectorySequences assembles a trajectory's turns into sequences. A
// trajectory without turns (it failed before its first call) has no
// sequences and no error: its failure is the trajectory's own Error.
func trajectorySequences(tr *agents.Trajectory) TrajectoryResult {
	if tr == nil {
		return TrajectoryResult{SequenceError: "missing trajectory"}
	}
	if len(tr.Turns) == 0 {
		return TrajectoryResult{}
	}
	// A split the agent side declared (tr.Splits: a history edit, a
	// context cut) always starts a new sequence, whatever the ids say;
	// within the pieces between them, a prompt that does not extend the
	// previous turn's ids is drift.
	var out TrajectoryResult
	cuts := []int{0}
	reasons := map[int]string{}
	for _, sp := range tr.Splits {
		if sp.Turn <= cuts[len(cuts)-1] || sp.Turn >= len(tr.Turns) {
			continue // out of order or outside the turns: nothing to split
		}
		cuts = append(cuts, sp.Turn)
		reasons[sp.Turn] = sp.Reason
		switch sp.Reason {
		case rollout.SplitHistoryEdit:
			out.HistoryEdits++
		case rollout.SplitContextCut:
			out.ContextCuts++
		}
	}
	cuts = append(cuts, len(tr.Turns))
	for c := 0; c+1 < len(cuts); c++ {
		from := cuts[c]
		seqs, _, err := llm.Sequences(tr.Turns[from:cuts[c+1]])
		if err != nil {
			if from == 0 {
				return TrajectoryResult{SequenceError: err.Error()}
			}
			// Sequences counts the piece's turns from 0.
			return TrajectoryResult{SequenceError: fmt.Sprintf("the turns from turn %d: %v", from, err)}
		}
		for i, s := range seqs {
			first := from + s.FirstTurn
			seq := rollout.Sequence{InputIDs: finishedIDs(s.InputIDs), LossMask: s.LossMask, Logprobs: sampledLogprobs(s.LossMask, s.Logprobs),
				FirstTurn: first, TurnFinishReasons: turnFinishReasons(tr.Turns[first : first+s.NumTurns])}
			switch {
			case i == 0:
				seq.Split = reasons[first]
			default:
				seq.Split = rollout.SplitDrift
				out.Drifts++
			}
			if verr := seq.Validate(); verr != nil {
				return TrajectoryResult{SequenceError: fmt.Sprintf("sequence %d: %v", len(out.Sequences), verr)}
			}
			out.Sequences = append(out.Sequences, seq)
		}
	}
	out.validated = true
	return out
}

// turnFinishReasons is each turn's finish reason as OpenAI names it:
// "tool_calls" for a turn that stopped to call tools (engines and the
// client say "stop" there), else the engine's.
func turnFinishReasons(turns []*llm.Turn) []string {
	out := make([]string, len(turns))
	for i, t := range turns {
		out[i] = turnFinishReason(t)
	}
	return out
}

// turnFinishReason is one turn's, as turnFinishReasons names them.
func turnFinishReason(t *llm.Turn) string {
	if t.FinishReason == "stop" && len(t.ToolCalls) > 0 {
		return "tool_calls"
	}
	return t.FinishReason
}

// finishedIDs returns a finished sequence's ids to keep until its step is
// assembled: the client's array itself (its turns' ids are dropped once the
// sequences hold them), or a copy of exactly its length when the array has
// grown well past it, as the client's growing arrays do, so that a step's
// thousands of held sequences do not keep the spare room alive.
func finishedIDs(ids []int32) []int32 {
	if cap(ids)-len(ids) <= len(ids)/8 {
		return ids[:len(ids):len(ids)]
	}
	return append(make([]int32, 0, len(ids)), ids...)
}

// sampledLogprobs returns the logprobs of the tokens whose mask is 1, the
// compact form of rollout.Sequence; a logprob that is not 0 where the mask
// is 0 is kept in place, so that Validate reports the sequence instead of
// the compact form hiding it.
func sampledLogprobs(mask []int8, logprobs []float64) []float64 {
	if len(logprobs) != len(mask) {
		return logprobs
	}
	n := 0
	for i, m := range mask {
		if m == 0 && logprobs[i] != 0 {
			return logprobs
		}
		if m != 0 {
			n++
		}
	}
	out := make([]float64, 0, n)
	for i, m := range mask {
		if m != 0 {
			out = append(out, logprobs[i])
		}
	}
	return out
}
