// Package oneshot measures the one-shot job: the built mgrpo binary started
// as a process, running one step against local fake servers and exiting, as
// users run it, side by side with the project's own lean Python loop
// (loop.py, stdlib only) on the same servers.
//
// The fake servers (a vLLM-shaped chat server that answers in vLLM's compact
// JSON with token ids and logprobs, and a Serper-shaped search with the pages
// its results link to) play a fixed conversation: the planner delegates once
// and answers, each executor searches, visits the first result and reports.
// They share no code with the client packages (stdlib only), so the client's
// decoders meet bytes they did not write. Nothing here is part of the mgrpo
// binary: the package is imported by its own benchmark only.
package oneshot
