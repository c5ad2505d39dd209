// Package policy is the scripted stochastic "model" behind the simulated
// inference server (sim/llm). It really plays the synthetic web's tasks
// (sim/web): offered a delegate tool it acts as a planner, offered search and
// visit tools it acts as an executor (or, when the prompt asks for an
// <answer> tag, as the single-agent baseline), offered no tools it answers
// from what the conversation already holds.
//
// The policy is stateless: every call rebuilds its state from the
// conversation (the question, the facts in tool results, the calls already
// made), exactly as a real model only sees its prompt. All randomness comes
// from the *rand.Rand of the request, so a run is reproducible from its seed
// while K rollouts of one question differ.
//
// Roles follow from the tool names offered, which are the contract with the
// agents that call the model: "delegate" ({"task": string}) makes a planner,
// "search" ({"query": [string]}) and "visit" ({"url": [string], "goal":
// string}) make an executor. Skills set how well each role plays: how a
// planner delegates, how carefully an executor reads, how often a call or an
// answer is malformed. Every choice of a turn goes through one sampler that
// is greedy at temperature 0 and reports the probability of what it chose.
package policy
