package policy

import (
	"encoding/json"
	"math"
	"strings"
)

// Policy is the scripted model. Its skills are fixed at New; Act keeps no
// state between calls (only a cache of parsed tool results, which never
// changes an answer), so a Policy is safe for concurrent use.
type Policy struct {
	skills Skills
	params *Params    // DefaultParams(skills), used when a request has none
	facts  *factCache // parsed tool results; a cache, not state
	links  *linkCache // parsed search results; a cache, not state
	calls  *callCache // parsed tool-call arguments; a cache, not state
}

// DefaultCacheBytes bounds the caches of a Policy made by New. Caches
// fill as they are used, so a policy that plays a few conversations takes
// little of it.
const DefaultCacheBytes = 256 << 20

// New returns a policy with skills s and caches of DefaultCacheBytes. Values
// outside the ranges Validate checks are clamped into them (call Validate
// first to reject them instead).
func New(s Skills) *Policy { return NewCached(s, DefaultCacheBytes) }

// NewCached is New with caches of parsed tool results and tool calls that
// hold at most cacheBytes in all, as estimated from their strings and
// headers: half for the facts of tool results, a quarter each for the links
// of search results and the arguments of tool calls. Zero or less caches
// nothing. A parsed tool result costs about 2 to 3 times its text's bytes,
// once however many conversations send it. The caches only save work:
// their size never changes an answer (see memo).
func NewCached(s Skills, cacheBytes int64) *Policy {
	p := &Policy{skills: s.clamped()}
	p.params = DefaultParams(p.skills)
	if cacheBytes > 0 {
		p.facts, p.links, p.calls = newFactCache(cacheBytes/2), newLinkCache(cacheBytes/4), newCallCache(cacheBytes/4)
	}
	return p
}

// Skills returns the policy's skills, as clamped by New.
func (p *Policy) Skills() Skills { return p.skills }

// Params returns the parameters the policy uses for a request without
// any: DefaultParams of its skills.
func (p *Policy) Params() *Params { return p.params }

// Act generates one assistant turn for req. The role follows from the tools
// offered: ToolDelegate makes a planner, ToolSearch or ToolVisit an executor,
// no tools an answerer that only reads the conversation. Decisions follow
// req.Params (the policy's own Params when nil); the output records them,
// with the turn's logprob. Act never panics: input it cannot make sense of
// yields an "I do not know" turn.
func (p *Policy) Act(req Request) Output {
	params := p.paramsFor(req)
	out := p.run(req, newChooser(req, params))
	if ambiguous(out.Decisions) {
		// Report the path Score recovers for this text (see ambiguous).
		if r := p.ScoreMatch(req, params, func(o Output) bool { return SameText(o, out) }, 0); r.OK {
			out.Logprob, out.ChoiceProb, out.Decisions = r.Logprob, math.Exp(r.Logprob), r.Decisions
		}
	}
	if req.Logprobs != LogprobsRaw {
		out.Logprob = ReportedLogprob(out.Decisions, req.Logprobs, req.Temperature, req.Filters)
		out.ChoiceProb = math.Exp(out.Logprob)
	}
	return out
}

// ambiguous reports whether a turn's text may follow from another decision
// path too. The policy decides only where an outcome changes the text, with
// one exception it cannot remove: trusting snippets (or cut sentences)
// changes a hop's facts, yet a later decision of the hop (rejecting the
// snippet's near-namesake, say) can lead back to the outcome the untrusting
// reader reaches. For such turns Act reports the path Score recovers, the
// first in Score's search order that writes the text, so that sampling and
// scoring agree by construction; it costs a search only on those turns.
// A malformed call is the second: arguments cut short or left empty hide
// the decisions that shaped them — which result to visit (which the
// reasoning names, when there is reasoning), how many queries to send
// (which it never names).
func ambiguous(ds []Decision) bool {
	for _, d := range ds {
		switch {
		case d.Kind == KindSnippet || d.Kind == KindReadCut:
			return true
		case d.Kind == KindMalformed && d.Taken == 1:
			return true
		}
	}
	return false
}

func (p *Policy) paramsFor(req Request) *Params {
	if req.Params != nil {
		return req.Params
	}
	return p.params
}

// run plays one turn with ch, which samples (Act) or follows a path
// (Score), so both go through the same code and the same panic guard.
func (p *Policy) run(req Request, ch *chooser) (out Output) {
	defer func() {
		// The scripted model sits behind a server that must survive any
		// request; a bug here becomes a visible refusal, not a crash.
		if recover() != nil {
			ch.decisions, ch.logprob = nil, 0
			out = Output{Content: "I do not know.", ChoiceProb: 1}
		}
	}()
	return p.act(req, ch)
}

// act is Act without the panic guard, so fuzz tests see real panics.
func (p *Policy) act(req Request, ch *chooser) (out Output) {
	conv := readConversation(req.Messages, p.calls)
	ch.ctx = [3]float64{1, float64(conv.turns), float64(len(conv.calls))}
	t := turn{p: p, ch: ch, conv: &conv}
	switch {
	case offers(req.Tools, ToolDelegate):
		ch.role = RolePlanner
		out = t.plan()
	case offers(req.Tools, ToolSearch) || offers(req.Tools, ToolVisit):
		ch.role = RoleExecutor
		t.canSearch = offers(req.Tools, ToolSearch)
		t.canVisit = offers(req.Tools, ToolVisit)
		t.notes = notesTool(req.Tools)
		out = t.execute()
	default:
		ch.role = RolePlanner
		var ok bool
		if out, ok = t.judge(); !ok {
			out = t.answerOnly()
		}
	}
	if p.skills.NoReasoning || req.NoReasoning {
		out.Reasoning = ""
	}
	out.Logprob = ch.logprob
	out.ChoiceProb = math.Exp(ch.logprob)
	out.Decisions = ch.decisions
	return out
}

// notesTool returns the name under which the sim MCP server's notes tool
// is offered (ToolNotes, or prefixed by its server's name), "" when it is
// not.
func notesTool(tools []Tool) string {
	for _, t := range tools {
		if t.Name == ToolNotes || strings.HasSuffix(t.Name, "_"+ToolNotes) {
			return t.Name
		}
	}
	return ""
}

func offers(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// turn is one call of Act: the policy, the turn's chooser and the rebuilt
// conversation.
type turn struct {
	p         *Policy
	ch        *chooser
	conv      *conversation
	canSearch bool
	canVisit  bool
	// notes is the offered name of the MCP notes tool, "" when none is
	// offered.
	notes string
}

func (t turn) skills() Skills { return t.p.skills }

// answer renders a final answer: inside <answer> tags when tags are due,
// except that with probability FormatError the tags are left out.
func (t turn) answer(prefix, text string, tagged bool) string {
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteString("\n\n")
	}
	switch {
	case !tagged:
		b.WriteString(text)
	case t.ch.flip(KindFormatError):
		b.WriteString("The answer is " + text + ".")
	default:
		b.WriteString("<answer>" + text + "</answer>")
	}
	return b.String()
}

// toolCall encodes args as the call's JSON arguments; with probability
// MalformedCall it breaks them instead, in one of three ways a real model
// does: JSON cut short, arguments left empty, or a bare string where an
// object belongs.
func (t turn) toolCall(name string, args any) ToolCall {
	js, err := json.Marshal(args)
	if err != nil {
		js = []byte("{}")
	}
	text := string(js)
	if t.ch.flip(KindMalformed) {
		switch t.ch.categorical(KindMalformedKind, 3, nil) {
		case 0:
			text = text[:len(text)/2]
		case 1:
			text = ""
		default:
			s, _ := json.Marshal(flatten(args))
			text = string(s)
		}
	}
	return ToolCall{Name: name, Arguments: text}
}

// flatten turns an arguments map into the loose string a model might write
// instead of an object.
func flatten(args any) string {
	m, ok := args.(map[string]any)
	if !ok {
		return ""
	}
	var parts []string
	for _, k := range []string{"task", "query", "url", "goal"} {
		switch v := m[k].(type) {
		case string:
			parts = append(parts, v)
		case []string:
			parts = append(parts, strings.Join(v, " "))
		}
	}
	return strings.Join(parts, " ")
}

// clamped returns s with every field forced into its valid range.
func (s Skills) clamped() Skills {
	for _, f := range []*float64{
		&s.DelegateHop, &s.DelegateChain, &s.CrossCheck, &s.Guess, &s.Retry,
		&s.PreferMajority, &s.Sloppiness, &s.SnippetShortcut, &s.PickBest,
		&s.VisitTwo, &s.MalformedCall, &s.FormatError,
	} {
		switch {
		case math.IsNaN(*f) || *f < 0:
			*f = 0
		case *f > 1:
			*f = 1
		}
	}
	if s.DelegateHop+s.DelegateChain+s.CrossCheck == 0 {
		s.DelegateHop = 1
	}
	s.MaxQueries = min(max(s.MaxQueries, 1), 3)
	s.PlannerTurns = min(max(s.PlannerTurns, 1), 64)
	s.ExecutorTurns = min(max(s.ExecutorTurns, 1), 64)
	return s
}
