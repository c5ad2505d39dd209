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
package policy
