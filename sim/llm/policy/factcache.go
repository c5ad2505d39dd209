package policy

import (
	"github.com/mgrpo/mgrpo/sim/web"
)

// maxCachedTexts bounds the caches of parsed tool results.
const maxCachedTexts = 4096

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

func newFactCache() *factCache { return newMemo[factKey, []parsedFact](maxCachedTexts) }

// facts returns the facts of a tool result's text through fc; snippet says
// it is a search result. The returned slice is shared and must not be
// modified.
func facts(fc *factCache, text string, snippet bool) []parsedFact {
	return fc.get(factKey{text, snippet}, func(k factKey) []parsedFact { return parseToolText(k.text, k.snippet) })
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
