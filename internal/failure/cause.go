package failure

// Cause is a short stable label of what made a rollout, a trajectory or a
// turn fail: it is the key of the counts in the step summary
// (infra_failures, model_failures) and a metric label. Each cause has one
// Kind, given by the table Causes.
type Cause = string

// The causes of failure. The infra causes say nothing about the policy;
// the model causes are the policy's own doing.
const (
	// CauseEngineUnreachable: the model server refused or dropped the
	// connection on every attempt of a call.
	CauseEngineUnreachable Cause = "engine_unreachable"
	// CauseEngine5xx: the model server answered 5xx on the last attempt.
	CauseEngine5xx Cause = "engine_5xx"
	// CauseEngine429: the model server answered 429 on the last attempt.
	CauseEngine429 Cause = "engine_429"
	// CauseEngine4xx: the model server refused the request itself (a
	// wrong model name or route, bad credentials): the setup is wrong, not
	// the policy.
	CauseEngine4xx Cause = "engine_4xx"
	// CauseEngineTimeout: an attempt, idle or call timeout ran out.
	CauseEngineTimeout Cause = "engine_timeout"
	// CauseStreamCut: an answer's body or event stream ended early or came
	// garbled, on every attempt.
	CauseStreamCut Cause = "stream_cut"
	// CauseServerAbort: the server aborted a generation (a weight-sync
	// pause outlasting the call, a shutdown) and it was not recovered.
	CauseServerAbort Cause = "server_abort"
	// CauseInterrupted: the run's shutdown or a weight update cut the
	// rollout.
	CauseInterrupted Cause = "interrupted"
	// CauseRunnerPanic: the runner panicked or returned no rollout.
	CauseRunnerPanic Cause = "runner_panic"
	// CauseStore: the run's store did not answer.
	CauseStore Cause = "store"
	// CauseJudge: the answer or expert judge failed after its retries.
	CauseJudge Cause = "judge"
	// CauseAgentService: an agent service (the gateway's) errored or
	// timed out.
	CauseAgentService Cause = "agent_service"
	// CauseToolOutage: more than the allowed fraction of the rollout's
	// tool calls hit a provider outage (5xx, 429, timeout, refused
	// connection after the tool's retries).
	CauseToolOutage Cause = "tool_outage"
	// CauseSetup: the run could not carry out the rollout (its query is
	// not among the run's tasks, a prompt template failed).
	CauseSetup Cause = "setup"

	// CauseInvalidFormat: the trajectory broke the answer or report
	// format, or wrote a tool call that does not parse.
	CauseInvalidFormat Cause = "invalid_format"
	// CauseTurnBudget: the turn or delegation budget ran out before a
	// final message.
	CauseTurnBudget Cause = "turn_budget"
	// CauseTokenBudget: the final message was cut by the token limit.
	CauseTokenBudget Cause = "token_budget"
	// CauseWallClock: the rollout's own wall-clock limit ran out (a model
	// that loops).
	CauseWallClock Cause = "wall_clock"
	// CauseContextLength: the server refused a prompt the model's own
	// output made longer than the context.
	CauseContextLength Cause = "context_length"
	// CauseAgentRequest: a gateway agent's request was refused for its
	// content (over the gateway's bounds, or a 4xx of the engine for it).
	CauseAgentRequest Cause = "agent_request"
	// CauseInvalidToolArgs: the model's tool arguments failed the tool's
	// schema.
	CauseInvalidToolArgs Cause = "invalid_tool_args"
	// CauseSequenceAssembly: the turns formed no training sequences.
	CauseSequenceAssembly Cause = "sequence_assembly"
	// CauseOther: a failure no other row names; trained as a model
	// failure, as every failure was before the classes existed.
	CauseOther Cause = "other"
)

// CauseInfo is one row of the class table.
type CauseInfo struct {
	Cause Cause
	Kind  Kind
	// What says in words when the cause is recorded (docs/architecture.md
	// holds the same table).
	What string
}

// Causes is the class table: every cause, its kind and when it is
// recorded. docs/architecture.md repeats it; a test keeps both in step.
var Causes = []CauseInfo{
	{CauseEngineUnreachable, KindInfra, "the model server refused or dropped the connection on every attempt"},
	{CauseEngine5xx, KindInfra, "the model server answered 5xx after the call's retries"},
	{CauseEngine429, KindInfra, "the model server answered 429 after the call's retries"},
	{CauseEngine4xx, KindInfra, "the model server refused the request (wrong model, route or dialect, credentials)"},
	{CauseEngineTimeout, KindInfra, "an attempt, idle or call timeout ran out"},
	{CauseStreamCut, KindInfra, "the answer's body or stream ended early or came garbled on every attempt"},
	{CauseServerAbort, KindInfra, "the server aborted the generation (weight-sync pause, shutdown) and it was not recovered"},
	{CauseInterrupted, KindInfra, "the run's shutdown or a weight update cut the rollout"},
	{CauseRunnerPanic, KindInfra, "the runner panicked or returned no rollout"},
	{CauseStore, KindInfra, "the run's store did not answer"},
	{CauseJudge, KindInfra, "the answer or expert judge failed after its retries"},
	{CauseAgentService, KindInfra, "an agent service errored or timed out"},
	{CauseToolOutage, KindInfra, "more than max_tool_outage_fraction of the rollout's tool calls hit a provider outage"},
	{CauseSetup, KindInfra, "the run could not carry out the rollout (unknown query, prompt template, dead-lettered by crashing workers)"},
	{CauseInvalidFormat, KindModel, "an answer, report or tool call broke the format"},
	{CauseTurnBudget, KindModel, "the turn or delegation budget ran out before a final message"},
	{CauseTokenBudget, KindModel, "the final message was cut by the token limit"},
	{CauseWallClock, KindModel, "the rollout's own wall-clock limit ran out"},
	{CauseContextLength, KindModel, "the server refused a prompt the model's own output made too long"},
	{CauseInvalidToolArgs, KindModel, "tool arguments failed the tool's schema"},
	{CauseAgentRequest, KindModel, "a gateway agent's request was refused for its content (over the gateway's bounds, or the engine's 4xx for it)"},
	{CauseSequenceAssembly, KindModel, "the turns formed no training sequences"},
	{CauseOther, KindModel, "any other failure (trained as zero, as before the classes)"},
}

// KindOf returns the kind of cause c from Causes; an unknown cause is a
// model failure (CauseOther's kind).
func KindOf(c Cause) Kind {
	for _, r := range Causes {
		if r.Cause == c {
			return r.Kind
		}
	}
	return KindModel
}

// IsToolOutage reports whether a tool call of class c hit an outage of its
// provider (after the tool's own retries), not a mistake of the model. A
// refused connection is ClassNetwork; ClassRefused is the SSRF guard
// refusing a URL, which is the run's configuration or the model's choice
// of URL, never the provider's outage.
func IsToolOutage(c Class) bool {
	switch c {
	case ClassServer, ClassRateLimited, ClassTimeout, ClassNetwork:
		return true
	}
	return false
}
