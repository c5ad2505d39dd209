package policy

import (
	"fmt"
	"math"
	"slices"
)

// Role names a block of parameters: the decisions of one agent role.
type Role string

// Roles with parameters. A planner turn (offered ToolDelegate) and an
// answer-only turn (offered no tools) use RolePlanner; an executor turn
// (offered ToolSearch or ToolVisit) uses RoleExecutor, and so does the
// single-agent baseline, which is an executor whose prompt asks for
// <answer> tags: its one decision of its own, KindFormatError, lives in the
// executor block (plain executors never take it).
const (
	RolePlanner  Role = "planner"
	RoleExecutor Role = "executor"
)

// Kind names one kind of stochastic decision.
type Kind string

// Decision kinds. Each has its options and its parameters (see Params).
const (
	// KindGuess: the planner answers on its first turn without delegating.
	KindGuess Kind = "guess"
	// KindRetry: the planner delegates a hop again after a miss.
	KindRetry Kind = "retry"
	// KindDelegate: how the planner delegates a hop: hop, chain or cross.
	KindDelegate Kind = "delegate"
	// KindFormatError: a tagged answer is written without its tags.
	KindFormatError Kind = "format_error"
	// KindMalformed: a tool call is emitted malformed.
	KindMalformed Kind = "malformed"
	// KindMalformedKind: how a malformed call is broken: truncated JSON,
	// empty arguments or a bare string.
	KindMalformedKind Kind = "malformed_kind"
	// KindPreferMajority: contradicting facts are settled by the majority.
	KindPreferMajority Kind = "prefer_majority"
	// KindMinority: which minority fact is taken; uniform, no parameters.
	KindMinority Kind = "minority"
	// KindDistractor: a fresh fact about a near-namesake is accepted.
	KindDistractor Kind = "distractor"
	// KindSnippet: the executor trusts search snippets this turn.
	KindSnippet Kind = "snippet"
	// KindReadCut: the executor reads snippets cut short as whole facts.
	KindReadCut Kind = "read_cut"
	// KindPick: which search result the executor visits.
	KindPick Kind = "pick"
	// KindVisitTwo: the executor visits a second result in the same call.
	KindVisitTwo Kind = "visit_two"
	// KindQueries: how many query strings a search call holds.
	KindQueries Kind = "queries"
)

// ParamsFormat is the format tag of a params file.
const ParamsFormat = "mgrpo-sim-policy-params/v1"

// MaxBias bounds the biases DefaultParams derives from skills: a skill of 0
// or 1 becomes a logit of ∓MaxBias (a probability within 1e-13 of it), so
// every vector stays finite and every option keeps a gradient.
const MaxBias = 30

// contextNames are the context features every binary and categorical
// decision sees: a constant 1, the number of assistant turns before this
// one, and the number of well-formed tool calls those turns made.
var contextNames = []string{"bias", "turn", "calls"}

// block is the layout of one decision's parameters.
type block struct {
	role   Role
	kind   Kind
	names  []string // parameter names within the block
	offset int      // index of the first parameter in the flat vector
}

// paramLayout is the fixed, documented order of the flat vector (see
// Params). It is computed once and never changed.
var paramLayout = buildLayout()

func binaryNames() []string { return contextNames }

// categoricalNames names the parameters of a decision among opts: the
// first option is the reference (logit 0), every other has one weight per
// context feature.
func categoricalNames(opts ...string) []string {
	var n []string
	for _, o := range opts[1:] {
		for _, c := range contextNames {
			n = append(n, o+"."+c)
		}
	}
	return n
}

func buildLayout() []block {
	delegate := categoricalNames("hop", "chain", "cross")
	malformedKind := categoricalNames("truncated", "empty", "string")
	bs := []block{
		{role: RolePlanner, kind: KindGuess, names: binaryNames()},
		{role: RolePlanner, kind: KindRetry, names: binaryNames()},
		{role: RolePlanner, kind: KindDelegate, names: delegate},
		{role: RolePlanner, kind: KindPreferMajority, names: binaryNames()},
		{role: RolePlanner, kind: KindDistractor, names: binaryNames()},
		{role: RolePlanner, kind: KindFormatError, names: binaryNames()},
		{role: RolePlanner, kind: KindMalformed, names: binaryNames()},
		{role: RolePlanner, kind: KindMalformedKind, names: malformedKind},
		{role: RoleExecutor, kind: KindSnippet, names: binaryNames()},
		{role: RoleExecutor, kind: KindReadCut, names: binaryNames()},
		{role: RoleExecutor, kind: KindDistractor, names: binaryNames()},
		{role: RoleExecutor, kind: KindPreferMajority, names: binaryNames()},
		{role: RoleExecutor, kind: KindPick, names: []string{"best.bias", "best.turn", "relevance"}},
		{role: RoleExecutor, kind: KindVisitTwo, names: binaryNames()},
		{role: RoleExecutor, kind: KindQueries, names: []string{"per_query", "per_query.turn"}},
		{role: RoleExecutor, kind: KindFormatError, names: binaryNames()},
		{role: RoleExecutor, kind: KindMalformed, names: binaryNames()},
		{role: RoleExecutor, kind: KindMalformedKind, names: malformedKind},
	}
	off := 0
	for i := range bs {
		bs[i].offset = off
		off += len(bs[i].names)
	}
	return bs
}

// paramLen is the length of the flat vector.
func paramLen() int {
	last := paramLayout[len(paramLayout)-1]
	return last.offset + len(last.names)
}

// findBlock returns the layout of role's kind, or nil when that decision
// has no parameters (KindMinority, or a kind the role does not take).
func findBlock(role Role, kind Kind) *block {
	for i := range paramLayout {
		if paramLayout[i].role == role && paramLayout[i].kind == kind {
			return &paramLayout[i]
		}
	}
	return nil
}

// Params are the parameters of the policy's decisions: per role, one small
// vector θ per decision kind. A decision among options j has logits
// θ·φ_j, where φ_j are features of the option in its context, and takes
// option j with probability softmax(logits)_j:
//
//   - a binary decision (guess, retry, prefer_majority, distractor,
//     format_error, malformed, snippet, read_cut, visit_two) has options
//     "no" (φ = 0) and "yes" (φ = the context: bias 1, turn, calls), so
//     P(yes) = sigmoid(θ_bias + θ_turn·turn + θ_calls·calls);
//   - a categorical decision (delegate: hop, chain, cross; malformed_kind:
//     truncated, empty, string) has its first option as reference (logit 0)
//     and, for every other option, one weight per context feature;
//   - pick, among the unvisited results ranked by relevance: the best one
//     has logit best.bias + best.turn·turn, result i ≥ 1 has logit
//     relevance·log(score_i / Σ_{k≥1} score_k), so relevance 1 (the
//     default) shares the others' probability in proportion to relevance
//     and 0 shares it evenly;
//   - queries, among 1..n query strings: option k (k extra strings) has
//     logit k·(per_query + per_query.turn·turn).
//
// The flat vector (Vector) lists the blocks in the order of Names: the
// planner's guess, retry, delegate, prefer_majority, distractor,
// format_error, malformed, malformed_kind, then the executor's snippet,
// read_cut, distractor, prefer_majority, pick, visit_two, queries,
// format_error, malformed, malformed_kind. A Params is immutable once made,
// so it is safe for concurrent use.
type Params struct {
	v []float64
}

// ParamNames returns the name of every entry of the flat vector, in order,
// as "role.kind.param" (e.g. "planner.delegate.chain.bias").
func ParamNames() []string {
	names := make([]string, 0, paramLen())
	for _, b := range paramLayout {
		for _, n := range b.names {
			names = append(names, string(b.role)+"."+string(b.kind)+"."+n)
		}
	}
	return names
}

// Names is ParamNames: the names of the entries of p.Vector().
func (p *Params) Names() []string { return ParamNames() }

// Len returns the length of the flat vector.
func (p *Params) Len() int { return len(p.v) }

// Vector returns a copy of the flat parameter vector, ordered as Names.
func (p *Params) Vector() []float64 { return slices.Clone(p.v) }

// At returns entry i of the flat vector without copying it.
func (p *Params) At(i int) float64 { return p.v[i] }

// WithVector returns new Params holding v (copied). It refuses a vector of
// the wrong length or with a non-finite entry, naming the entry.
func (p *Params) WithVector(v []float64) (*Params, error) { return ParamsFromVector(v) }

// ParamsFromVector returns Params holding v (copied), ordered as
// ParamNames; it refuses a vector of the wrong length or with a non-finite
// entry.
func ParamsFromVector(v []float64) (*Params, error) {
	if n := paramLen(); len(v) != n {
		return nil, fmt.Errorf("params vector has %d entries, want %d", len(v), n)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("params vector entry %d (%s) = %v: must be finite", i, ParamNames()[i], x)
		}
	}
	return &Params{v: slices.Clone(v)}, nil
}

// Block returns a copy of the parameters of role's decision kind, named by
// BlockNames, or nil when that decision has no parameters.
func (p *Params) Block(role Role, kind Kind) []float64 {
	b := findBlock(role, kind)
	if b == nil {
		return nil
	}
	return slices.Clone(p.v[b.offset : b.offset+len(b.names)])
}

// BlockNames returns the parameter names of role's decision kind (e.g.
// "bias", "turn", "calls"), or nil when it has no parameters.
func BlockNames(role Role, kind Kind) []string {
	if b := findBlock(role, kind); b != nil {
		return slices.Clone(b.names)
	}
	return nil
}

// logit is log(q/(1-q)) bounded to ±MaxBias.
func logit(q float64) float64 {
	return boundBias(math.Log(q) - math.Log1p(-q))
}

// logRatio is log(a/b) for non-negative weights, bounded to ±MaxBias.
func logRatio(a, b float64) float64 {
	floor := math.Exp(-MaxBias)
	return boundBias(math.Log(max(a, floor)) - math.Log(max(b, floor)))
}

func boundBias(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return 0
	case x > MaxBias:
		return MaxBias
	case x < -MaxBias:
		return -MaxBias
	}
	return x
}

// DefaultParams returns the parameters under which every decision has the
// probability s gives it today (s is clamped as New clamps it): biases are
// the skills' logits (bounded to ±MaxBias), every feature weight is 0
// except pick's relevance, which is 1 so that a wrong pick goes to the
// other results in proportion to their relevance, as the skill-driven
// policy did. Skills that are not decisions (turn budgets, MaxQueries as
// an upper bound, NoReasoning) stay skills.
func DefaultParams(s Skills) *Params {
	s = s.clamped()
	p := &Params{v: make([]float64, paramLen())}
	set := func(role Role, kind Kind, name string, x float64) {
		b := findBlock(role, kind)
		i := slices.Index(b.names, name)
		p.v[b.offset+i] = x
	}
	for _, r := range []Role{RolePlanner, RoleExecutor} {
		set(r, KindPreferMajority, "bias", logit(s.PreferMajority))
		set(r, KindDistractor, "bias", logit(s.Sloppiness))
		set(r, KindFormatError, "bias", logit(s.FormatError))
		set(r, KindMalformed, "bias", logit(s.MalformedCall))
	}
	set(RolePlanner, KindGuess, "bias", logit(s.Guess))
	set(RolePlanner, KindRetry, "bias", logit(s.Retry))
	set(RolePlanner, KindDelegate, "chain.bias", logRatio(s.DelegateChain, s.DelegateHop))
	set(RolePlanner, KindDelegate, "cross.bias", logRatio(s.CrossCheck, s.DelegateHop))
	set(RoleExecutor, KindSnippet, "bias", logit(s.SnippetShortcut))
	set(RoleExecutor, KindReadCut, "bias", logit(s.Sloppiness))
	set(RoleExecutor, KindPick, "best.bias", logit(s.PickBest))
	set(RoleExecutor, KindPick, "relevance", 1)
	set(RoleExecutor, KindVisitTwo, "bias", logit(s.VisitTwo))
	return p
}

// WithRole returns a copy of p whose blocks of role are taken from from:
// a trainer that trains one role's model can merge its blocks into params
// that another trainer's role keeps.
func (p *Params) WithRole(role Role, from *Params) *Params {
	q := &Params{v: slices.Clone(p.v)}
	for _, b := range paramLayout {
		if b.role == role {
			copy(q.v[b.offset:b.offset+len(b.names)], from.v[b.offset:b.offset+len(b.names)])
		}
	}
	return q
}

// RoleOf returns the role of entry i of the flat vector.
func RoleOf(i int) Role {
	for _, b := range paramLayout {
		if i >= b.offset && i < b.offset+len(b.names) {
			return b.role
		}
	}
	return ""
}
