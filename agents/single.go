package agents

import (
	"context"
	"time"
)

// Single is the single-agent baseline: one model with search and visit that
// answers in <answer> tags. It reuses an executor's tools and budget with
// its own prompts. It is safe for concurrent use.
type Single struct {
	exec *Executor
}

// NewSingle validates cfg (an executor configuration: model, tools, budget,
// prompts).
func NewSingle(cfg ExecutorConfig) (*Single, error) {
	e, err := NewExecutor(cfg)
	if err != nil {
		return nil, err
	}
	return &Single{exec: e}, nil
}

// Run carries out one rollout; the tree has no executors.
func (s *Single) Run(ctx context.Context, q Query) *Rollout {
	start := time.Now()
	traj := &Trajectory{Role: RoleSingle, Task: q.Question}
	p := s.exec.cfg.Prompts
	system, err := p.render(PromptSingleSystem, map[string]any{})
	var user string
	if err == nil {
		user, err = p.render(PromptSingleUser, map[string]any{"Question": q.Question})
	}
	if err != nil {
		traj.Error = err.Error()
	} else {
		l := s.exec.newLoop(q.Key+"/single", deriveSeed(q.Seed, RoleSingle), false)
		l.run(ctx, system, user, traj)
		checkAnswer(traj)
	}
	settle(traj)
	return &Rollout{Question: q.Question, Planner: traj, Answer: traj.Answer, Started: start, Duration: time.Since(start)}
}
