package agents

import (
	"encoding/json"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// Roles of trajectories.
const (
	RolePlanner  = "planner"
	RoleExecutor = "executor"
	RoleSingle   = "single"
)

// Trajectory is one agent's run: every model call with its tokens, every
// tool call with its observation, and how it ended.
type Trajectory struct {
	Role string `json:"role"`
	// Index is the executor's position in its rollout's delegation order
	// (0 for planner and single trajectories).
	Index int `json:"index"`
	// Task is the question (planner, single) or the delegated subtask.
	Task string `json:"task"`
	// Turns are the client's records, one per model call, in order. The
	// last may be partial (llm.Turn.Partial): a generation the server
	// aborted, kept with its tokens; the trajectory then has an Error.
	Turns []*llm.Turn `json:"turns"`
	// Steps holds, per turn, the tool calls it made (aligned with Turns).
	Steps []Step `json:"steps"`
	// Final is the text of the final message (reasoning removed): the
	// executor's report, or the planner's message with its answer.
	Final string `json:"final"`
	// Answer is the text inside the final <answer> tags (planner, single).
	Answer string `json:"answer,omitempty"`
	// FormatOK is the trajectory's format validity (see the package doc);
	// FormatErrors says what broke it.
	FormatOK     bool     `json:"format_ok"`
	FormatErrors []string `json:"format_errors,omitempty"`
	// Error is the failure that ended the trajectory early (a model call
	// that gave up, a cancelled context), empty otherwise.
	Error string `json:"error,omitempty"`
	// FailureKind says whose fault Error is (infra or model, see
	// internal/failure); FailureCause is a short stable label of what
	// failed (for example "engine_unreachable", "turn_budget"), used in
	// counts and metrics. Both are empty when Error is.
	FailureKind  failure.Kind `json:"failure_kind,omitempty"`
	FailureCause string       `json:"failure_cause,omitempty"`
	// FailureEndpoint is the endpoint an infra failure names (the model
	// server that did not answer), credentials redacted; empty when none.
	FailureEndpoint string `json:"failure_endpoint,omitempty"`
	// FailureTurn is the index of the turn on which Error happened (the
	// model call that failed or was cut, the N of Error's "turn N:"); nil
	// when there is no failure or it came before any turn (a setup error).
	FailureTurn *int `json:"failure_turn,omitempty"`
	// Splits are the turns at which the trajectory's token sequence
	// starts anew for a declared reason (see Split), in turn order.
	Splits []Split `json:"splits,omitempty"`
	// AnswerNow reports that the agent was told to answer now.
	AnswerNow bool          `json:"answer_now,omitempty"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration"`
}

// Step is what one turn's tool calls did.
type Step struct {
	Calls []CallRecord `json:"calls,omitempty"`
	// FormatError is the parse failure of this turn's tool calls, if any,
	// with the raw text kept.
	FormatError string `json:"format_error,omitempty"`
	FormatRaw   string `json:"format_raw,omitempty"`
}

// CallRecord is one tool call and its outcome.
type CallRecord struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Arguments   json.RawMessage `json:"arguments"`
	Observation string          `json:"observation"`
	Meta        tools.Meta      `json:"meta"`
	// Executor is the index of the executor trajectory a delegate call
	// started, -1 otherwise.
	Executor int `json:"executor"`
}

// NumCalls counts the trajectory's tool calls.
func (t *Trajectory) NumCalls() int {
	n := 0
	for _, s := range t.Steps {
		n += len(s.Calls)
	}
	return n
}

// FinishReason is the last turn's finish reason: "abort" when that turn is
// partial (a generation the server ended, kept with its tokens), "error"
// when the trajectory ended in another failure or before any turn.
func (t *Trajectory) FinishReason() string {
	if n := len(t.Turns); n > 0 && t.Turns[n-1].Partial() {
		return t.Turns[n-1].FinishReason
	}
	if t.Error != "" || len(t.Turns) == 0 {
		return "error"
	}
	return t.Turns[len(t.Turns)-1].FinishReason
}

// Rollout is the tree of one rollout: the planner's trajectory (or the
// single agent's) and its executors' trajectories in delegation order.
type Rollout struct {
	Question  string        `json:"question"`
	Planner   *Trajectory   `json:"planner"`
	Executors []*Trajectory `json:"executors"`
	Answer    string        `json:"answer"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration"`
	// Foreign holds the calls under the rollout's planner URL that were not
	// its planner's (a second planner conversation, a first call without
	// the rollout's task): kept to be seen, never sampled.
	Foreign []*Trajectory `json:"foreign,omitempty"`
	// Unmatched lists the executors (indices into Executors) whose task
	// matches no delegation of the planner.
	Unmatched []int `json:"unmatched,omitempty"`
}
