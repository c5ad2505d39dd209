package policy

import (
	"strings"

	"github.com/mgrpo/mgrpo/sim/web"
)

// factCache memoises the facts parsed from tool results (see memo).
type factCache = memo[factKey, []parsedFact]

type factKey struct {
	text    string
	snippet bool // parsed as a search result (cut facts marked)
}

// parsedFact is a fact of a tool result and, for a search result, whether
// an ellipsis cut it short.
type parsedFact struct {
	fact web.Fact
	cut  bool
}

// newFactCache returns a fact cache of at most maxBytes. An entry costs
// its text plus its facts' strings and headers.
func newFactCache(maxBytes int64) *factCache {
	return newMemo(maxBytes, func(k factKey, ps []parsedFact) int {
		n := len(k.text)
		for _, p := range ps {
			n += 56 + len(p.fact.Subject) + len(p.fact.Relation) + len(p.fact.Object)
		}
		return n
	})
}

// facts returns the facts of a tool result's text through fc; snippet says
// it is a search result. The returned slice is shared and must not be
// modified.
func facts(fc *factCache, text string, snippet bool) []parsedFact {
	return fc.get(factKey{text, snippet}, func(k factKey) []parsedFact {
		ps := parseToolText(k.text, k.snippet)
		if fc != nil {
			// The facts are substrings of a rewritten copy of the text;
			// copies of their own keep the cache from holding the text
			// twice.
			for i := range ps {
				f := &ps[i].fact
				f.Subject, f.Relation, f.Object = strings.Clone(f.Subject), strings.Clone(f.Relation), strings.Clone(f.Object)
			}
		}
		return ps
	})
}

// parseToolText parses the facts of one tool result. Snippets are cut with
// ellipses, and a sentence cut short still looks like a fact ending at the
// ellipsis's first dot ("The founder of X is Ida ..."); such facts are kept
// but marked cut.
func parseToolText(text string, snippet bool) []parsedFact {
	var out []parsedFact
	if !snippet {
		for _, f := range web.ParseFacts(text) {
			out = append(out, parsedFact{fact: f})
		}
		return out
	}
	whole := web.ParseFacts(ellipsis.ReplaceAllString(text, "\n"))
	for _, f := range web.ParseFacts(text) {
		cut := true
		for _, w := range whole {
			if w == f {
				cut = false
				break
			}
		}
		out = append(out, parsedFact{fact: f, cut: cut})
	}
	return out
}
