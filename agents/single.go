package agents

import (
	"context"
	"errors"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// Single is the single-agent baseline: one model with search and visit that
// answers in <answer> tags. It reuses an executor's tools and budget with
// its own prompts. It is safe for concurrent use.
type Single struct {
	exec      *Executor
	wallClock time.Duration
}

// NewSingle validates cfg (an executor configuration: model, tools, budget,
// prompts) and the rollout budget, of which a single agent uses the
// wall-clock limit (it delegates nothing).
func NewSingle(cfg ExecutorConfig, rollout RolloutBudget) (*Single, error) {
	e, err := NewExecutor(cfg)
	err = errors.Join(err, rollout.Validate())
	if err != nil {
		return nil, err
	}
	return &Single{exec: e, wallClock: rollout.WallClock}, nil
}

// Run carries out one rollout; the tree has no executors. Past the
// rollout's wall-clock limit it ends with what it has, the limit recorded
// as the trajectory's error.
func (s *Single) Run(ctx context.Context, q Query) *Rollout {
	start := time.Now()
	ctx, cancel := withWallClock(ctx, s.wallClock)
	defer cancel()
	traj := &Trajectory{Role: RoleSingle, Task: q.Question}
	p := s.exec.cfg.Prompts
	system, err := p.render(PromptSingleSystem, map[string]any{})
	var user string
	if err == nil {
		user, err = p.render(PromptSingleUser, map[string]any{"Question": q.Question})
	}
	if err != nil {
		traj.Error = err.Error()
		traj.fail(failure.CauseSetup, "")
	} else {
		l := s.exec.snapshot(ctx).newLoop(q.Key+"/single", deriveSeed(q.Seed, RoleSingle), false)
		l.run(ctx, system, user, traj)
		checkAnswer(traj)
	}
	settle(traj)
	return &Rollout{Question: q.Question, Planner: traj, Answer: traj.Answer, Started: start, Duration: time.Since(start)}
}
