package policy

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
)

// DefaultMaxReplays caps the replays of one turn that Score tries.
const DefaultMaxReplays = 4096

// ScoreResult is what scoring one turn found.
type ScoreResult struct {
	// OK reports that a decision path reproduced the output; Reason says
	// why not otherwise.
	OK     bool
	Reason string
	// Logprob is the path's log-probability under the params scored with,
	// exactly what Act reports as Output.Logprob when it samples that path.
	Logprob float64
	// Grad is d Logprob / d Params.Vector().
	Grad []float64
	// Output is the replayed output, Decisions its path.
	Output    Output
	Decisions []Decision
	// Replays is how many times the turn was replayed.
	Replays int
}

// Score recovers the decision path that makes req's turn produce exactly
// out (reasoning, content, and every tool call's name and arguments), and
// returns its logprob under params (the policy's own when nil) and the
// gradient of that logprob with respect to params.Vector(). ok is false when
// no path within DefaultMaxReplays reproduces out (a corrupted output).
func (p *Policy) Score(req Request, out Output, params *Params) (logprob float64, grad []float64, ok bool) {
	r := p.ScoreMatch(req, params, func(o Output) bool { return SameText(o, out) }, DefaultMaxReplays)
	return r.Logprob, r.Grad, r.OK
}

// SameText reports whether two outputs hold the same text: reasoning,
// content, and the same tool calls (name and arguments) in order. IDs,
// probabilities and decisions are ignored.
func SameText(a, b Output) bool {
	if a.Reasoning != b.Reasoning || a.Content != b.Content || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i].Name != b.ToolCalls[i].Name || a.ToolCalls[i].Arguments != b.ToolCalls[i].Arguments {
			return false
		}
	}
	return true
}

// ScoreMatch is Score with the test of a replayed output given by match
// (the server compares rendered text) and a cap of maxReplays (≤ 0 means
// DefaultMaxReplays). It replays the turn along candidate decision paths,
// most probable prefix first: each replay follows a prefix of outcomes and
// then takes the most probable outcome of every later decision; a replay
// that does not match queues, for every decision past its prefix, the path
// up to it with each other outcome, at the logprob of that prefix. The
// first replay that matches wins.
//
// The policy makes decisions only where their outcome changes the text
// (lazy snippet and read-cut habits, hop and chain merged when one hop is
// left), so the path of an output is unique and the first match is the
// path that was sampled.
func (p *Policy) ScoreMatch(req Request, params *Params, match func(Output) bool, maxReplays int) ScoreResult {
	if params == nil {
		params = p.params
	}
	if maxReplays <= 0 {
		maxReplays = DefaultMaxReplays
	}
	q := &pathQueue{}
	heap.Push(q, pathItem{})
	res := ScoreResult{}
	for q.Len() > 0 {
		if res.Replays >= maxReplays {
			res.Reason = fmt.Sprintf("no decision path reproduces the output within %d replays", maxReplays)
			return res
		}
		it := heap.Pop(q).(pathItem)
		ch := &chooser{params: params, ctx: [3]float64{1, 0, 0}, replay: true, follow: it.prefix}
		out := p.run(req, ch)
		res.Replays++
		if ch.bad {
			continue
		}
		if match(out) {
			res.OK, res.Output, res.Decisions, res.Logprob = true, out, ch.decisions, ch.logprob
			res.Grad = make([]float64, params.Len())
			for i := range ch.decisions {
				ch.decisions[i].AddGrad(res.Grad)
			}
			return res
		}
		taken := make([]int, len(ch.decisions))
		lp := 0.0
		for d := range ch.decisions {
			dec := &ch.decisions[d]
			taken[d] = dec.Taken
			if d >= len(it.prefix) {
				for g := range dec.Outcomes() {
					if qg := dec.OutcomeProb(g); g != dec.Taken && qg > 0 {
						prefix := append(slices.Clone(taken[:d]), g)
						q.seq++
						heap.Push(q, pathItem{prefix: prefix, logprob: lp + math.Log(qg), seq: q.seq})
					}
				}
			}
			lp += dec.Logprob()
		}
	}
	res.Reason = fmt.Sprintf("no decision path reproduces the output (%d paths tried)", res.Replays)
	return res
}

// pathItem is a candidate path prefix with its logprob; seq breaks ties in
// the order queued, so the search is deterministic.
type pathItem struct {
	prefix  []int
	logprob float64
	seq     int
}

// pathQueue is a max-heap of path prefixes by logprob.
type pathQueue struct {
	items []pathItem
	seq   int
}

func (q *pathQueue) Len() int { return len(q.items) }
func (q *pathQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.logprob != b.logprob {
		return a.logprob > b.logprob
	}
	return a.seq < b.seq
}
func (q *pathQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *pathQueue) Push(x any)    { q.items = append(q.items, x.(pathItem)) }
func (q *pathQueue) Pop() any {
	n := len(q.items)
	it := q.items[n-1]
	q.items = q.items[:n-1]
	return it
}
