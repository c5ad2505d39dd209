package farm

import (
	"fmt"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// TrajectoryResult is what the farm derived from one agent trajectory of a
// rollout: its training sequences, how many drift events split them (the
// token check failed: a bug of the token path, warned about) and how many
// history edits (the agent rewrote what the model had seen; see
// agents.Split). SequenceError records turns that could not be assembled into
// sequences; such a trajectory has no sequences (it yields no sample) and
// its format counts as invalid.
type TrajectoryResult struct {
	Sequences     []rollout.Sequence `json:"sequences"`
	Drifts        int                `json:"drifts"`
	HistoryEdits  int                `json:"history_edits,omitempty"`
	ContextCuts   int                `json:"context_cuts,omitempty"`
	SequenceError string             `json:"sequence_error,omitempty"`

	// validated records that trajectorySequences checked every sequence
	// in this process, so sample building need not check them again. It
	// does not travel: a result decoded from elsewhere is checked.
	validated bool
}

// RolloutResult is the outcome of one RolloutTask: the rollout tree, its
// scores and the token sequences of its trajectories. Like the task it is a
// plain serialisable value, so results can be produced by workers and
// assembled into steps elsewhere; grouping and advantages happen only once
// every result of a step is in.
type RolloutResult struct {
	Task rollout.RolloutTask `json:"task"`
	// Tree is the rollout as the agents produced it, except that its turns'
	// prompt token ids are dropped once Planner and Executors hold them (see
	// Execute); never nil (a runner that returned nothing gets a tree whose
	// planner records the error).
	Tree *agents.Rollout `json:"tree"`
	// Scores are the rollout's rewards and the verdicts behind them.
	Scores rollout.RolloutScores `json:"scores"`
	// Planner holds the planner's (or single agent's) sequences, Executors
	// those of Tree.Executors in delegation order.
	Planner   TrajectoryResult   `json:"planner"`
	Executors []TrajectoryResult `json:"executors"`
	// ScoringSeconds is how long scoring the rollout took (judges
	// included); not part of any step file.
	ScoringSeconds float64 `json:"scoring_seconds,omitempty"`
	// Error is why the rollout failed (the planner's error, a runner panic,
	// planner turns that form no sequences); empty for a rollout that ran to
	// its end. A failed rollout is scored 0 with invalid format.
	Error string `json:"error,omitempty"`
	// FailureKind, FailureCause and FailureEndpoint classify the rollout
	// (see internal/failure's class table): set when it failed, and when
	// it ran to its end but an executor, a judge or too many of its tool
	// calls met an infrastructure failure. Empty for a rollout that
	// neither failed nor met one.
	FailureKind     failure.Kind `json:"failure_kind,omitempty"`
	FailureCause    string       `json:"failure_cause,omitempty"`
	FailureEndpoint string       `json:"failure_endpoint,omitempty"`
	// Retries is how many times the rollout ran again after an infra
	// failure (this result is the last run's); RetryCauses are the causes
	// of the runs retried, in order.
	// RetryEndpoint is the endpoint the last retried run's failure named.
	Retries       int      `json:"retries,omitempty"`
	RetryCauses   []string `json:"retry_causes,omitempty"`
	RetryEndpoint string   `json:"retry_endpoint,omitempty"`
	// ToolOutages counts its tool calls whose provider failed after the
	// tool's retries (5xx, 429, timeout, refused connection).
	ToolOutages int `json:"tool_outages,omitempty"`

	// toolCalls counts its tool calls (delegations aside); it does not
	// travel.
	toolCalls int
	// final makes an infra result with retries left the rollout's own
	// result, never a pending retry (a dead-lettered rollout: running it
	// again is what killed its workers); it does not travel.
	final bool
}

// Failed reports whether the rollout failed.
func (r *RolloutResult) Failed() bool { return r.Error != "" }

// trajectories returns the planner trajectory followed by the executors.
func (r *RolloutResult) trajectories() []*agents.Trajectory {
	return append([]*agents.Trajectory{r.Tree.Planner}, r.Tree.Executors...)
}

// describe names a result in errors and logs.
func (r *RolloutResult) describe() string {
	return fmt.Sprintf("rollout %s", r.Task.ID())
}
