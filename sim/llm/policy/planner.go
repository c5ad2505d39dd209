package policy

import (
	"fmt"
	"strings"

	"github.com/mgrpo/mgrpo/sim/web"
)

// Delegation styles the planner chooses among for an unresolved hop.
const (
	styleHop   = iota // one hop as a one-relation subtask
	styleChain        // the whole remaining chain in one subtask
	styleCross        // the same hop twice in one turn
)

// maxHopTries bounds how often the planner delegates the same hop before it
// gives up on it, whatever its Retry skill says.
const maxHopTries = 3

// plan is the planner's turn: read the question, rebuild the facts the
// executors reported, then answer when the chain resolves, or delegate the
// next hop in one of the styles the skills weigh.
func (t turn) plan() Output {
	chain, ok := taskChain(t.conv.task, true)
	if !ok {
		return Output{
			Reasoning: "I cannot find a question I know how to split into subtasks.",
			Content:   t.answer("", "unknown", true),
		}
	}
	s := t.skills()
	r := &resolver{ch: t.ch, conv: t.conv, snippet: trusted, cut: ruledOut}
	res := r.resolve(chain, t.conv.reportFacts())
	known := knownText(res)
	if res.done {
		return Output{
			Reasoning: fmt.Sprintf("The question asks for %s. %s So the answer is %s.", phrase(chain), known, res.current),
			Content:   t.answer("", res.current, true),
		}
	}
	if t.conv.turns+1 >= s.PlannerTurns {
		return t.guess(chain, res, "I am out of turns, so I answer with my best guess.")
	}
	if t.conv.turns == 0 && t.ch.flip(KindGuess) {
		return t.guess(chain, res, "I think I already know this one, so I answer directly.")
	}
	rel, cur := res.next(chain), res.current
	tries := 0
	for _, d := range t.conv.delegations() {
		if len(d.Relations) > 0 && d.Relations[0] == rel && strings.EqualFold(d.Entity, cur) {
			tries++
		}
	}
	retry := ""
	if tries > 0 {
		if tries >= maxHopTries || !t.ch.flip(KindRetry) {
			return t.guess(chain, res, fmt.Sprintf("The executors could not find the %s of %s; I answer with my best guess.", rel, cur))
		}
		retry = fmt.Sprintf("The last attempt at the %s of %s failed, so I try again. ", rel, cur)
	}
	rest := web.Chain{Entity: cur, Relations: chain.Relations[len(res.steps):]}
	hop := web.Chain{Entity: cur, Relations: []string{rel}}
	style := styleHop
	if len(rest.Relations) == 1 {
		// The whole remaining chain is the next hop: the chain style
		// would delegate the same subtask as the hop style, so the two
		// are one outcome (and the output tells which outcome it was).
		if t.ch.categorical(KindDelegate, 3, [][]int{{styleHop, styleChain}, {styleCross}}) == 1 {
			style = styleCross
		}
	} else {
		style = t.ch.categorical(KindDelegate, 3, nil)
	}
	var calls []ToolCall
	var plan string
	switch style {
	case styleChain:
		calls = append(calls, t.delegate(rest))
		plan = fmt.Sprintf("I will delegate the rest of the chain, %s, in one subtask.", phrase(rest))
	case styleCross:
		calls = append(calls, t.delegate(hop), t.delegate(hop))
		plan = fmt.Sprintf("I will delegate the %s of %s to two executors and compare their reports.", rel, cur)
	default:
		calls = append(calls, t.delegate(hop))
		plan = fmt.Sprintf("I will delegate the %s of %s.", rel, cur)
	}
	return Output{
		Reasoning: fmt.Sprintf("The question asks for %s. %s%sI still need the %s of %s. %s",
			phrase(chain), known, retry, rel, cur, plan),
		ToolCalls: calls,
	}
}

func (t turn) delegate(c web.Chain) ToolCall {
	return t.toolCall(ToolDelegate, map[string]any{"task": web.SubtaskText(c)})
}

// guess answers without a resolved chain: the furthest entity reached,
// which is almost never the answer.
func (t turn) guess(chain web.Chain, res resolution, why string) Output {
	return Output{
		Reasoning: fmt.Sprintf("The question asks for %s. %s", phrase(chain), why),
		Content:   t.answer("", res.current, true),
	}
}

// taskChain reads the chain a message asks for: a question first and a
// subtask second when questionFirst, the other way round otherwise.
func taskChain(text string, questionFirst bool) (web.Chain, bool) {
	first, second := web.ParseQuestion, web.ParseSubtask
	if !questionFirst {
		first, second = second, first
	}
	if c, ok := first(text); ok && len(c.Relations) > 0 {
		return c, true
	}
	if c, ok := second(text); ok && len(c.Relations) > 0 {
		return c, true
	}
	return web.Chain{}, false
}

// phrase renders a chain as "the r2 of the r1 of Entity".
func phrase(c web.Chain) string {
	s := web.SubtaskText(c)
	return strings.TrimSuffix(strings.TrimPrefix(s, "Find "), ".")
}

// knownText summarizes the resolved hops for the reasoning text.
func knownText(res resolution) string {
	if len(res.steps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("I know that ")
	for i, f := range res.steps {
		if i > 0 {
			b.WriteString(" and ")
		}
		fmt.Fprintf(&b, "the %s of %s is %s", f.Relation, f.Subject, f.Object)
	}
	b.WriteString(". ")
	return b.String()
}
