package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// ExecutorConfig configures the executor (sub-agent).
type ExecutorConfig struct {
	Model   Model
	Tools   Toolbox
	Budget  Budget
	Prompts Prompts
}

// Executor carries out one delegated subtask with search and visit. It is
// safe for concurrent use.
type Executor struct {
	cfg   ExecutorConfig
	tools []openai.Tool
}

// NewExecutor validates cfg.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	var errs []error
	if cfg.Model == nil {
		errs = append(errs, errors.New("executor: no model"))
	}
	if cfg.Tools == nil {
		errs = append(errs, errors.New("executor: no tools"))
	}
	if cfg.Prompts.t == nil {
		cfg.Prompts = DefaultPrompts()
	}
	errs = append(errs, cfg.Budget.Validate("executor"))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Executor{cfg: cfg, tools: openAITools(cfg.Tools.Specs())}, nil
}

// Run carries out task and returns the trajectory; key routes its calls to
// one endpoint and seed makes it reproducible. Failures are recorded in the
// trajectory.
func (e *Executor) Run(ctx context.Context, task, key string, seed int64, index int) *Trajectory {
	traj := &Trajectory{Role: RoleExecutor, Index: index, Task: task}
	defer settle(traj)
	system, err := e.cfg.Prompts.render(PromptExecutorSystem, map[string]any{})
	var user string
	if err == nil {
		user, err = e.cfg.Prompts.render(PromptExecutorUser, map[string]any{"Task": task})
	}
	if err != nil {
		traj.Error = err.Error()
		traj.fail(failure.CauseSetup, "")
		return traj
	}
	e.newLoop(key, seed, true).run(ctx, system, user, traj)
	checkReport(traj)
	return traj
}

// snapshot returns the executor one rollout uses: e itself, or, when its
// toolbox may change between rollouts, a copy over the toolbox's current
// snapshot.
func (e *Executor) snapshot(ctx context.Context) *Executor {
	s, ok := e.cfg.Tools.(Snapshotter)
	if !ok {
		return e
	}
	cfg := e.cfg
	cfg.Tools = s.Snapshot(ctx)
	return &Executor{cfg: cfg, tools: openAITools(cfg.Tools.Specs())}
}

// newLoop builds the turn loop over the executor's tools.
func (e *Executor) newLoop(key string, seed int64, report bool) *loop {
	return &loop{
		model: e.cfg.Model, tools: e.tools, budget: e.cfg.Budget, prompts: e.cfg.Prompts,
		key: key, seed: seed, report: report, prepare: e.toolCall,
	}
}

// toolCall runs one search/visit call through the toolbox.
func (e *Executor) toolCall(call openai.ToolCall) func(context.Context) CallRecord {
	return func(ctx context.Context) CallRecord {
		args := []byte(call.Function.Arguments)
		obs := e.cfg.Tools.Call(ctx, call.Function.Name, args)
		return CallRecord{ID: call.ID, Name: call.Function.Name, Arguments: jsonOrString(args), Observation: obs.Text, Meta: obs.Meta, Executor: -1}
	}
}

// jsonOrString keeps valid JSON arguments as they are and quotes anything
// else, so a record always marshals.
func jsonOrString(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	return []byte(strconv.Quote(string(b)))
}

// executorKey is the stickiness key of an executor trajectory.
func executorKey(rolloutKey string, index int) string {
	return fmt.Sprintf("%s/executor/%d", rolloutKey, index)
}
