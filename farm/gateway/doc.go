// Package gateway trains the user's own agents: a farm.Runner that serves,
// per rollout and role, an OpenAI-compatible base URL
// ({gateway}/r/{rollout}/{planner|executor|agent}/v1) in front of the role's
// token-exact client (llm), so agent code in any language or
// framework produces the same rollout trees as the built-in agents.
//
// Every call under a role's URL goes through the role's client — routing,
// retries, timeouts, drift handling, weight versions, metrics and prefix
// stickiness apply — and its Turn (prompt and completion token ids,
// logprobs, tool calls) is recorded. Calls form trajectories by
// message-prefix extension: a request whose messages extend an idle
// trajectory's messages and the answer it got continues it, anything else
// starts a new one (or the X-Mgrpo-Trajectory header names the
// trajectory). Raw completions (…/v1/completions) go to the engine as the
// agent rendered them, no chat template, and form trajectories by prompt
// extension: a prompt that starts with an idle completions trajectory's
// last prompt and answer (by token ids, or by text) continues it. The
// planner's trajectories and the executors' form the tree;
// d_k is the number of executor trajectories.
//
// Tasks reach the agent by push (POST to the agent service's URL) or pull
// (GET /v1/tasks/next, POST /v1/tasks/{rollout}/result, with leases). An
// agent service that fails, never calls, or misses the deadline is an
// infra failure of the rollout (failure.KindInfra, cause "agent_service"),
// its message kept. docs/gateway.md is the wire contract.
package gateway
