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
// answer is malformed.
//
// # Parameters, decisions and scoring
//
// Every stochastic choice of a turn is a decision of a kind (Kind) made by
// one chooser: a softmax over the decision's options of logits θ·φ, with θ
// the role's block of Params and φ a few features of the option and its
// context (see Params). DefaultParams(skills) reproduces the skills'
// probabilities; a trainer changes Params, not Skills. The chooser is greedy
// at temperature 0, samples p^(1/T) above it, and records each decision
// (Output.Decisions) and the turn's logprob before temperature
// (Output.Logprob).
//
// Decisions are made only where their outcome changes the text: the
// snippet and cut-sentence habits are decided at the first hop whose facts
// they change, and the planner's hop and chain styles are one outcome when
// one hop is left. So the decision path is a function of the output, and
// Score recovers it from the conversation and the output alone, by
// replaying the turn along candidate paths, most probable first; it returns
// the path's logprob and its gradient with respect to Params.Vector(). Where
// two paths can still write the same text (see ambiguous in policy.go), Act
// reports the path Score recovers, so sampling and scoring agree exactly by
// construction.
package policy
