// Package agents runs the farm's agents on top of the inference client
// (llm) and the tools (tools): one turn loop — call the model, parse
// its tool calls, run the turn's calls concurrently (bounded), append the
// observations, repeat — shared by three agents:
//
//   - Planner, the main agent: tools delegate(task) and, when a reasoning
//     model is configured, reason(question). Each delegation runs an
//     Executor on the subtask and returns its report; several delegations
//     in one turn run in parallel. The final answer is written as
//     <answer>…</answer>.
//   - Executor, the sub-agent: tools search and visit; it ends with a report
//     for the planner (its final message, without tool calls).
//   - Single, the paper's single-agent baseline: one model with search and
//     visit, answering in <answer>…</answer>.
//
// # Format validity
//
// A trajectory's FormatOK is what the rewards gate on:
//
//   - planner and single: the final message holds exactly one
//     <answer>…</answer> block; every tool call of every turn parsed; no
//     budget was exceeded; no model call failed.
//   - executor: the trajectory ended with a final report (a message without
//     tool calls and with non-empty text); every tool call parsed; no budget
//     was exceeded; no model call failed.
//
// A final message cut off by the token limit (finish reason "length") is
// not a valid ending. Nor is a generation the server aborted (finish
// reason "abort", e.g. during a weight update) that no retry finished: the
// client returns it as a partial turn with its error, and the trajectory
// keeps it as its last turn, with its tokens and logprobs, records the
// error and finishes with reason "abort". Calls to unknown tools and calls whose arguments fail
// their schema are observations the model reads, not format errors; a
// <tool_call> block that does not parse is a format error, reported to the
// model so it can retry, and recorded.
//
// # Budgets
//
// Each agent has a Budget: turns, tokens per turn, and context tokens —
// when the last call's prompt and completion come within AnswerNowMargin of
// the context, the agent is told to answer now, as deep-research agents do.
// A rollout (planner or single agent) also has a wall-clock limit, past
// which every call, tool and executor in flight is cancelled and the
// rollout ends with what it has, the limit recorded as the error of each
// trajectory it cut; a planner rollout has a delegation cap too.
//
// # The rollout tree
//
// Planner.Run returns a Rollout: the planner's trajectory and, in
// delegation order, its executors' trajectories, each with its turns (the
// client's token-exact records), tool calls with observations, errors and
// timings. A failure inside a rollout is recorded in it, never returned as
// an error: only a cancelled context ends Run early, and even then the
// partial tree is returned.
package agents
