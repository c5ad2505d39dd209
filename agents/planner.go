package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// Names of the planner's own tools.
const (
	ToolDelegate = "delegate"
	ToolReason   = "reason"
)

var (
	delegateSpec = tools.Spec{
		Name:        ToolDelegate,
		Description: "Hand a self-contained research subtask to an executor, which searches the web, reads pages and returns a report.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","description":"The subtask, stated so it can be done without the rest of the conversation."}},"required":["task"]}`),
	}
	reasonSpec = tools.Spec{
		Name:        ToolReason,
		Description: "Ask a strong reasoning model to think through a question step by step, given what you know; returns its conclusion.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"The question, with the facts it needs."}},"required":["question"]}`),
	}
)

// PlannerConfig configures the planner (main agent).
type PlannerConfig struct {
	Model    Model
	Executor *Executor
	// Reasoner, when set, backs the reason tool; nil offers no reason tool.
	Reasoner Model
	Budget   Budget
	Rollout  RolloutBudget
	Prompts  Prompts
	// Tools, when set, are further tools the planner may call beside
	// delegate and reason (an MCP server's given to the planner role).
	Tools Toolbox
}

// Planner answers a question by delegating subtasks to executors. It is
// safe for concurrent use.
type Planner struct {
	cfg   PlannerConfig
	tools []openai.Tool
}

// NewPlanner validates cfg.
func NewPlanner(cfg PlannerConfig) (*Planner, error) {
	var errs []error
	if cfg.Model == nil {
		errs = append(errs, errors.New("planner: no model"))
	}
	if cfg.Executor == nil {
		errs = append(errs, errors.New("planner: no executor"))
	}
	if cfg.Prompts.t == nil {
		cfg.Prompts = DefaultPrompts()
	}
	errs = append(errs, cfg.Budget.Validate("planner"), cfg.Rollout.Validate())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Planner{cfg: cfg, tools: openAITools(cfg.specs(cfg.Tools))}, nil
}

// specs returns the planner's own tools and those of tb (nil: none).
func (cfg PlannerConfig) specs(tb Toolbox) []tools.Spec {
	specs := []tools.Spec{delegateSpec}
	if cfg.Reasoner != nil {
		specs = append(specs, reasonSpec)
	}
	if tb != nil {
		specs = append(specs, tb.Specs()...)
	}
	return specs
}

// Query is one rollout's input.
type Query struct {
	// Key identifies the rollout (e.g. run/step/query/k): it prefixes the
	// endpoint stickiness keys of its trajectories.
	Key      string
	Question string
	// Seed makes the rollout reproducible: every trajectory and turn
	// samples with a seed derived from it.
	Seed int64
}

// Run carries out one rollout. It always returns the tree; failures are
// recorded in its trajectories. Past the rollout's wall-clock limit every
// call, tool and executor in flight is cancelled and the rollout ends with
// what it has: the turns already taken, and the limit recorded as the
// error of each trajectory it cut.
func (p *Planner) Run(ctx context.Context, q Query) *Rollout {
	start := time.Now()
	ctx, cancel := withWallClock(ctx, p.cfg.Rollout.WallClock)
	defer cancel()
	r := &Rollout{Question: q.Question, Started: start}
	traj := &Trajectory{Role: RolePlanner, Task: q.Question}
	// A toolbox that may change between rollouts is read once, here.
	d := &delegations{planner: p, query: q, rollout: r, traj: traj, executor: p.cfg.Executor.snapshot(ctx), tools: p.cfg.Tools}
	ptools := p.tools
	if s, ok := p.cfg.Tools.(Snapshotter); ok {
		d.tools = s.Snapshot(ctx)
		ptools = openAITools(p.cfg.specs(d.tools))
	}
	system, err := p.cfg.Prompts.render(PromptPlannerSystem, map[string]any{})
	var user string
	if err == nil {
		user, err = p.cfg.Prompts.render(PromptPlannerUser, map[string]any{"Question": q.Question})
	}
	if err != nil {
		traj.Error = err.Error()
		traj.fail(failure.CauseSetup, "")
	} else {
		l := &loop{
			model: p.cfg.Model, tools: ptools, budget: p.cfg.Budget, prompts: p.cfg.Prompts,
			key: q.Key + "/planner", seed: deriveSeed(q.Seed, RolePlanner), prepare: d.prepare,
			longCalls: true,
		}
		l.run(ctx, system, user, traj)
		checkAnswer(traj)
	}
	settle(traj)
	r.Planner, r.Answer, r.Duration = traj, traj.Answer, time.Since(start)
	return r
}

// delegations carries out one rollout's planner tool calls. prepare runs
// in the loop's goroutine while no call of the rollout is running, so it
// may grow rollout.Executors; each running delegation writes only its own
// slot.
type delegations struct {
	planner *Planner
	query   Query
	rollout *Rollout
	traj    *Trajectory
	// executor and tools are the rollout's snapshots of the planner's
	// executor and extra tools (see Snapshotter).
	executor *Executor
	tools    Toolbox
}

// prepare numbers delegations in call order (so executor indices do not
// depend on goroutine scheduling) and returns the work of the call.
func (d *delegations) prepare(call openai.ToolCall) func(context.Context) CallRecord {
	rec := CallRecord{ID: call.ID, Name: call.Function.Name, Arguments: jsonOrString([]byte(call.Function.Arguments)), Executor: -1}
	switch call.Function.Name {
	case ToolDelegate:
		var args struct {
			Task string `json:"task"`
		}
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || strings.TrimSpace(args.Task) == "" {
			return observe(rec, failure.ClassInvalidArgs, `delegate needs {"task": "<a non-empty subtask>"}; nothing was delegated.`)
		}
		limit := d.planner.cfg.Rollout.MaxDelegations
		if len(d.rollout.Executors) >= limit {
			d.traj.formatError(fmt.Sprintf("delegation budget of %d exceeded", limit))
			return observe(rec, failure.ClassInvalidArgs, fmt.Sprintf("The delegation budget of %d subtasks is spent: answer with what you have.", limit))
		}
		index := len(d.rollout.Executors)
		rec.Executor = index
		d.rollout.Executors = append(d.rollout.Executors, nil)
		return func(ctx context.Context) CallRecord {
			start := time.Now()
			sub := d.executor.Run(ctx, args.Task, executorKey(d.query.Key, index), deriveSeed(d.query.Seed, RoleExecutor, index), index)
			d.rollout.Executors[index] = sub
			rec.Observation = executorObservation(sub)
			rec.Meta = tools.Meta{Tool: ToolDelegate, Latency: time.Since(start), Bytes: len(rec.Observation)}
			if sub.Error != "" {
				rec.Meta.Class, rec.Meta.Error = failure.ClassServer, sub.Error
			}
			return rec
		}
	case ToolReason:
		if d.planner.cfg.Reasoner == nil {
			break
		}
		var args struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || strings.TrimSpace(args.Question) == "" {
			return observe(rec, failure.ClassInvalidArgs, `reason needs {"question": "<a non-empty question>"}.`)
		}
		return func(ctx context.Context) CallRecord {
			start := time.Now()
			t, err := d.planner.cfg.Reasoner.Chat(ctx, llm.Request{Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: args.Question}}})
			rec.Meta = tools.Meta{Tool: ToolReason, Latency: time.Since(start)}
			if err != nil {
				rec.Observation = "The reasoning model failed: " + err.Error()
				rec.Meta.Class, rec.Meta.Error = failure.ClassServer, err.Error()
			} else {
				rec.Observation = stripReasoning(t.Message.Content)
			}
			rec.Meta.Bytes = len(rec.Observation)
			return rec
		}
	default:
		if tb := d.tools; tb != nil && slices.ContainsFunc(tb.Specs(), func(s tools.Spec) bool { return s.Name == call.Function.Name }) {
			return func(ctx context.Context) CallRecord {
				obs := tb.Call(ctx, call.Function.Name, []byte(call.Function.Arguments))
				rec.Observation, rec.Meta = obs.Text, obs.Meta
				return rec
			}
		}
	}
	return observe(rec, failure.ClassInvalidArgs, fmt.Sprintf("There is no tool %q; the tools are: %s.", call.Function.Name, strings.Join(d.toolNames(), ", ")))
}

func (d *delegations) toolNames() []string {
	names := []string{ToolDelegate}
	if d.planner.cfg.Reasoner != nil {
		names = append(names, ToolReason)
	}
	if tb := d.tools; tb != nil {
		for _, s := range tb.Specs() {
			names = append(names, s.Name)
		}
	}
	return names
}

// observe completes a record that needs no work.
func observe(rec CallRecord, class failure.Class, text string) func(context.Context) CallRecord {
	rec.Observation = text
	rec.Meta = tools.Meta{Tool: rec.Name, Class: class, Error: text, Bytes: len(text)}
	return func(context.Context) CallRecord { return rec }
}

// executorObservation is what the planner reads back from a delegation.
func executorObservation(sub *Trajectory) string {
	switch {
	case sub.Final != "":
		return sub.Final
	case sub.Error != "":
		return "The executor failed before reporting: " + sub.Error
	default:
		return "The executor ended without a report."
	}
}
