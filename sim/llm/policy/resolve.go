package policy

import (
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

// resolver holds what a reader needs to walk a chain.
type resolver struct {
	ch         *chooser
	skills     Skills
	conv       *conversation
	useSnippet bool // snippet facts count for this turn
	readCut    bool // snippet sentences cut short count as facts this turn
}

// resolve walks chain hop by hop over facts. For each hop it takes the
// exact-subject facts; contradicting objects are settled by majority with
// probability PreferMajority. Without an exact fact, a fact about a
// near-namesake is accepted with probability Sloppiness when it was read
// this turn, and always when the model already acted on it in an earlier
// call (so a belief, once acted on, persists).
func (r resolver) resolve(chain web.Chain, facts []evidence) resolution {
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

func (r resolver) hop(rel, subject string, facts []evidence) (string, bool) {
	var exact, near []option
	for _, e := range facts {
		// A snippet fact counts when the model chose to trust snippets this
		// turn, or when it already acted on the snippet's object.
		if e.snippet && !r.useSnippet && !r.conv.committed(e.fact.Object) {
			continue
		}
		if e.cut && !r.readCut && !r.conv.committed(e.fact.Object) {
			continue
		}
		if !strings.EqualFold(e.fact.Relation, rel) {
			continue
		}
		switch {
		case strings.EqualFold(e.fact.Subject, subject):
			exact = addOption(exact, e)
		case nearName(e.fact.Subject, subject):
			near = addOption(near, e)
		}
	}
	if len(exact) > 0 {
		return r.settle(exact), true
	}
	if len(near) == 0 {
		return "", false
	}
	for _, o := range near {
		if r.conv.committed(o.object) {
			return o.object, true
		}
	}
	for _, o := range near {
		if o.fresh && r.ch.flip(r.skills.Sloppiness) {
			return o.object, true
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
func (r resolver) settle(opts []option) string {
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
	if r.ch.flip(r.skills.PreferMajority) {
		return opts[best].object
	}
	others := make([]string, 0, len(opts)-1)
	for i, o := range opts {
		if i != best {
			others = append(others, o.object)
		}
	}
	return others[r.ch.intn(len(others))]
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
