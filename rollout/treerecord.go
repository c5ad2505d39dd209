package rollout

import (
	"encoding/json"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// TreeRecord is the tree of one rollout as rollouts.jsonl holds it: the
// planner's trajectory (or the single agent's) and its executors'
// trajectories in delegation order. The farm writes it without what depends
// on timing or on the order in which concurrent rollouts ran, so Started
// and Duration, here and in every trajectory, are zero in its files; they
// stay so that lines keep their keys.
type TreeRecord struct {
	Question  string              `json:"question"`
	Planner   *TrajectoryRecord   `json:"planner"`
	Executors []*TrajectoryRecord `json:"executors"`
	Answer    string              `json:"answer"`
	Started   time.Time           `json:"started"`
	Duration  time.Duration       `json:"duration"`
	// Foreign holds the calls under the rollout's planner URL that neither
	// started nor continued its one planner trajectory (a second
	// conversation: an agent sharing one client across rollouts or roles);
	// they are kept here and never sampled.
	Foreign []*TrajectoryRecord `json:"foreign,omitempty"`
	// Unmatched lists the executors (indices into Executors) that belong
	// to no delegation of the planner.
	Unmatched []int `json:"unmatched,omitempty"`
}

// TrajectoryRecord is one agent's run in a TreeRecord: its model calls, its
// tool calls with their observations, and how it ended.
type TrajectoryRecord struct {
	// Role is "planner", "executor" or "single".
	Role string `json:"role"`
	// Index is the executor's position in its rollout's delegation order
	// (0 for planner and single trajectories).
	Index int `json:"index"`
	// Task is the question (planner, single) or the delegated subtask.
	Task string `json:"task"`
	// Turns holds one entry per model call, in order; an entry may be null.
	Turns []*TurnRecord `json:"turns"`
	// Steps holds, per turn, the tool calls it made (aligned with Turns).
	Steps []StepRecord `json:"steps"`
	// Final is the text of the final message (reasoning removed).
	Final string `json:"final"`
	// Answer is the text inside the final <answer> tags (planner, single).
	Answer string `json:"answer,omitempty"`
	// FormatOK is the trajectory's format validity; FormatErrors says what
	// broke it.
	FormatOK     bool     `json:"format_ok"`
	FormatErrors []string `json:"format_errors,omitempty"`
	// Error is the failure that ended the trajectory early, empty otherwise.
	Error string `json:"error,omitempty"`
	// FailureKind and FailureCause say whose fault Error is and what
	// failed (see internal/failure).
	FailureKind  failure.Kind `json:"failure_kind,omitempty"`
	FailureCause string       `json:"failure_cause,omitempty"`
	// FailureTurn is the index of the turn Error happened on; omitted
	// without a failure or before any turn.
	FailureTurn *int `json:"failure_turn,omitempty"`
	// Splits are the turns at which the trajectory's token sequence
	// started anew for a reason the agent side declared (a gateway agent's
	// history edit): where and why.
	Splits []SplitRecord `json:"splits,omitempty"`
	// AnswerNow reports that the agent was told to answer now.
	AnswerNow bool          `json:"answer_now,omitempty"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration"`
}

// TurnRecord is one model call of a trajectory: the assistant message, the
// tool calls parsed from it, and how the generation ended. Token ids,
// logprobs, the serving endpoint, latency and attempts are not recorded
// (the samples hold the tokens).
type TurnRecord struct {
	// Message is the assistant message as the server returned it.
	Message MessageRecord `json:"message"`
	// ToolCalls are the calls of the message: the server-parsed tool_calls,
	// or those parsed client-side from Hermes blocks in the content.
	ToolCalls []ToolCallRecord `json:"tool_calls,omitempty"`
	// ToolCallError is set when a Hermes block in the content was
	// malformed.
	ToolCallError *ToolCallErrorRecord `json:"tool_call_error,omitempty"`
	// FinishReason is "stop", "length" or "tool_calls"; "abort" on a
	// partial turn.
	FinishReason string `json:"finish_reason"`
	// Abort is set when the generation ended before the model finished it.
	Abort *AbortRecord `json:"abort,omitempty"`
	// StopReason is the matched stop string or token id, "" at EOS.
	StopReason string      `json:"stop_reason,omitempty"`
	Usage      UsageRecord `json:"usage"`
	// WeightVersion is the weight version that served the call, when the
	// server reports one.
	WeightVersion string `json:"weight_version,omitempty"`
	// Sampling is set only when the call was sent with other sampling
	// settings than its role's (StepSummary.Sampling names those): every
	// setting it was sent with, the seed aside. Recording the exception
	// keeps rollouts.jsonl as small as before for runs that sample as
	// configured.
	Sampling *SamplingRecord `json:"sampling,omitempty"`
}

// ToolCallErrorRecord is a malformed tool call block of a turn's content.
type ToolCallErrorRecord struct {
	// Index is the 0-based position of the bad block among the message's
	// blocks, or -1 when the message itself is unparseable.
	Index int `json:"index"`
	// Raw is the text of the bad block (or the whole content).
	Raw string `json:"raw"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
}

// AbortRecord says how a generation was ended before the model finished
// it.
type AbortRecord struct {
	// By is who ended it ("server" or "client").
	By string `json:"by"`
	// Reason is the server's message, when it sent one.
	Reason string `json:"reason,omitempty"`
}

// UsageRecord is the token usage a server reported for one call.
type UsageRecord struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// The details are null when the server sent none.
	PromptTokensDetails     *PromptTokensDetailsRecord     `json:"prompt_tokens_details"`
	CompletionTokensDetails *CompletionTokensDetailsRecord `json:"completion_tokens_details"`
}

// PromptTokensDetailsRecord is the breakdown of a call's prompt tokens.
type PromptTokensDetailsRecord struct {
	AudioTokens  int `json:"audio_tokens"`
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetailsRecord is the breakdown of a call's completion
// tokens.
type CompletionTokensDetailsRecord struct {
	AudioTokens              int `json:"audio_tokens"`
	ReasoningTokens          int `json:"reasoning_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// ToolCallRecord is one tool call of an assistant message.
type ToolCallRecord struct {
	// Index is set only on calls that came from a stream chunk.
	Index    *int               `json:"index,omitempty"`
	ID       string             `json:"id,omitempty"`
	Type     string             `json:"type"`
	Function FunctionCallRecord `json:"function"`
}

// FunctionCallRecord is the function a tool call names, with its arguments
// as the model wrote them (JSON text).
type FunctionCallRecord struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// StepRecord is what one turn's tool calls did.
type StepRecord struct {
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
	Meta        CallMeta        `json:"meta"`
	// Executor is the index of the executor trajectory a delegate call
	// started, -1 otherwise.
	Executor int `json:"executor"`
}

// CallMeta describes how a tool call went. The farm writes Latency,
// CacheHit, CacheHits, SharedHits and Upstream as zero: they depend on
// timing and on what other rollouts fetched first.
type CallMeta struct {
	// Tool and Provider name what ran ("search", "serper").
	Tool     string        `json:"tool"`
	Provider string        `json:"provider,omitempty"`
	Latency  time.Duration `json:"latency"`
	CacheHit bool          `json:"cache_hit"`
	// CacheHits counts the sub-requests served from the cache; Requests
	// counts all sub-requests.
	CacheHits  int `json:"cache_hits"`
	Requests   int `json:"requests"`
	SharedHits int `json:"shared_hits,omitempty"`
	Upstream   int `json:"upstream"`
	// Bytes is the size of the observation text.
	Bytes int `json:"bytes"`
	// Class is empty on success, else the failure class of the call.
	Class failure.Class `json:"class,omitempty"`
	// Partial is true when some sub-requests failed and others did not.
	Partial bool `json:"partial,omitempty"`
	// Error is the failure's text (redacted), empty on success.
	Error string `json:"error,omitempty"`
}

// Failed reports whether the call failed as a whole (every sub-request
// failed, or the arguments were refused).
func (m CallMeta) Failed() bool { return m.Class != failure.ClassOK && !m.Partial }

// SplitRecord is one declared split of a trajectory: Turn is the first turn
// of the new sequence, Reason SplitHistoryEdit or SplitContextCut, Message
// the index of the first request message that differed from what the model
// had seen, Detail what changed.
type SplitRecord struct {
	Turn    int    `json:"turn"`
	Reason  string `json:"reason"`
	Message int    `json:"message"`
	Detail  string `json:"detail,omitempty"`
}
