package policy

import (
	"slices"
	"strings"
	"unicode"

	"github.com/mgrpo/mgrpo/sim/web"
)

// resolution is how far a chain resolves over the facts a model has read.
type resolution struct {
	// steps are the facts taken, one per resolved hop, in chain order, each
	// with the subject the model believes it is about (a sloppy reader
	// rewrites a distractor's fact onto the entity it was looking for).
	steps []web.Fact
	// current is the entity the next unresolved hop applies to, or the
	// answer when done.
	current string
	done    bool
}

// next returns the relation of the first unresolved hop.
func (r resolution) next(ch web.Chain) string {
	if len(r.steps) >= len(ch.Relations) {
		return ""
	}
	return ch.Relations[len(r.steps)]
}

// flag is a per-turn reading habit that may still be undecided.
type flag int8

const (
	ruledOut  flag = iota // not this turn
	undecided             // decided at the first hop it changes
	trusted               // this turn, yes
)

// resolver holds what a reader needs to walk a chain, and the reading
// habits of the turn.
type resolver struct {
	ch      *chooser
	conv    *conversation
	snippet flag // snippet facts count for this turn
	cut     flag // snippet sentences cut short count as facts this turn
}

// resolve walks chain hop by hop over facts. For each hop it takes the
// exact-subject facts; contradicting objects are settled by majority
// (KindPreferMajority). Without an exact fact, a fact about a near-namesake
// is accepted (KindDistractor) when it was read this turn, and always when
// the model already acted on it in an earlier call (so a belief, once acted
// on, persists).
func (r *resolver) resolve(chain web.Chain, facts []evidence) resolution {
	res := resolution{current: chain.Entity}
	for _, rel := range chain.Relations {
		obj, ok := r.hop(rel, res.current, facts)
		if !ok {
			return res
		}
		res.steps = append(res.steps, web.Fact{Subject: res.current, Relation: rel, Object: obj})
		res.current = obj
	}
	res.done = len(chain.Relations) > 0
	return res
}

// option is one distinct object offered for a hop, with its support.
type option struct {
	object string
	count  int
	fresh  bool
}

// options are the exact-subject and near-namesake options of one hop.
type options struct{ exact, near []option }

// hop resolves one hop. The turn's undecided reading habits are decided
// here, at the first hop whose outcome they can change, so that a decision
// is only ever made when the text it leads to depends on it.
func (r *resolver) hop(rel, subject string, facts []evidence) (string, bool) {
	if r.snippet == undecided {
		off := r.options(rel, subject, facts, false, false)
		matters := r.differ(off, r.options(rel, subject, facts, true, false))
		if !matters && r.cut == undecided {
			matters = r.differ(off, r.options(rel, subject, facts, true, true))
		}
		if matters {
			r.snippet = ruledOut
			if r.ch.flip(KindSnippet) {
				r.snippet = trusted
			}
		}
	}
	if r.snippet == trusted && r.cut == undecided {
		if r.differ(r.options(rel, subject, facts, true, false), r.options(rel, subject, facts, true, true)) {
			r.cut = ruledOut
			if r.ch.flip(KindReadCut) {
				r.cut = trusted
			}
		}
	}
	o := r.options(rel, subject, facts, r.snippet == trusted, r.cut == trusted)
	return r.take(o)
}

// options gathers the options of the hop "rel of subject", counting
// snippet facts when snippets and cut sentences when cut are read (facts
// the model already acted on always count).
func (r *resolver) options(rel, subject string, facts []evidence, snippets, cut bool) options {
	var o options
	for _, e := range facts {
		if e.snippet && !snippets && !r.conv.committed(e.fact.Object) {
			continue
		}
		if e.cut && !cut && !r.conv.committed(e.fact.Object) {
			continue
		}
		if !strings.EqualFold(e.fact.Relation, rel) {
			continue
		}
		switch {
		case strings.EqualFold(e.fact.Subject, subject):
			o.exact = addOption(o.exact, e)
		case nearName(e.fact.Subject, subject):
			o.near = addOption(o.near, e)
		}
	}
	return o
}

// determined returns the hop's outcome when no decision is needed to reach
// it; det is false when one is.
func (r *resolver) determined(o options) (obj string, ok, det bool) {
	if len(o.exact) == 1 {
		return o.exact[0].object, true, true
	}
	if len(o.exact) > 1 {
		for _, x := range o.exact {
			if r.conv.committed(x.object) {
				return x.object, true, true
			}
		}
		return "", false, false
	}
	for _, x := range o.near {
		if r.conv.committed(x.object) {
			return x.object, true, true
		}
	}
	for _, x := range o.near {
		if x.fresh {
			return "", false, false
		}
	}
	return "", false, true
}

// differ reports whether two option sets of a hop may lead to different
// outcomes: different outcomes when both are determined, different sets
// otherwise.
func (r *resolver) differ(a, b options) bool {
	oa, ka, da := r.determined(a)
	ob, kb, db := r.determined(b)
	if da && db {
		return oa != ob || ka != kb
	}
	return !slices.Equal(a.exact, b.exact) || !slices.Equal(a.near, b.near)
}

// take settles a hop's options into its outcome.
func (r *resolver) take(o options) (string, bool) {
	if len(o.exact) > 0 {
		return r.settle(o.exact), true
	}
	if len(o.near) == 0 {
		return "", false
	}
	for _, x := range o.near {
		if r.conv.committed(x.object) {
			return x.object, true
		}
	}
	for _, x := range o.near {
		if x.fresh && r.ch.flip(KindDistractor) {
			return x.object, true
		}
	}
	return "", false
}

func addOption(opts []option, e evidence) []option {
	for i := range opts {
		if strings.EqualFold(opts[i].object, e.fact.Object) {
			opts[i].count++
			opts[i].fresh = opts[i].fresh || e.fresh
			return opts
		}
	}
	return append(opts, option{object: e.fact.Object, count: 1, fresh: e.fresh})
}

// settle picks among contradicting objects for one hop.
func (r *resolver) settle(opts []option) string {
	if len(opts) == 1 {
		return opts[0].object
	}
	// An object the model already acted on wins: it does not change its
	// mind about a hop it built on.
	for _, o := range opts {
		if r.conv.committed(o.object) {
			return o.object
		}
	}
	best := 0
	for i, o := range opts {
		if o.count > opts[best].count {
			best = i
		}
	}
	if r.ch.flip(KindPreferMajority) {
		return opts[best].object
	}
	others := make([]string, 0, len(opts)-1)
	for i, o := range opts {
		if i != best {
			others = append(others, o.object)
		}
	}
	return others[r.ch.uniform(KindMinority, len(others))]
}

// nearName reports whether a and b are different but easily confused
// names: equal up to case, punctuation, spacing or a plural "s", within a
// small edit distance, one word longer than the other, or sharing their
// first word and word count.
func nearName(a, b string) bool {
	na, nb := squash(a), squash(b)
	if na == "" || nb == "" {
		return false
	}
	if na == nb {
		return true
	}
	if strings.TrimSuffix(na, "s") == strings.TrimSuffix(nb, "s") {
		return true
	}
	if len(na) >= 5 && len(nb) >= 5 && len(na) <= 64 && len(nb) <= 64 && editDistance(na, nb) <= 2 {
		return true
	}
	// A name with one word added in front or behind ("New Orvane",
	// "Velmora Labs Group", "Ida Kestrel Jr").
	wa, wb := strings.Fields(strings.ToLower(a)), strings.Fields(strings.ToLower(b))
	if len(wa)+1 == len(wb) || len(wb)+1 == len(wa) {
		short, long := strings.Join(wa, " "), strings.Join(wb, " ")
		if len(wa) > len(wb) {
			short, long = long, short
		}
		if strings.HasPrefix(long, short+" ") || strings.HasSuffix(long, " "+short) {
			return true
		}
	}
	fa, fb := firstWord(a), firstWord(b)
	return len(fa) >= 4 && strings.EqualFold(fa, fb) &&
		len(strings.Fields(a)) == len(strings.Fields(b))
}

// squash lowercases s and drops everything but letters and digits.
func squash(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// editDistance is the Levenshtein distance of two short strings, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
