package policy

import (
	"sync"

	"github.com/mgrpo/mgrpo/sim/web"
)

// maxCachedTexts bounds a factCache; when full it starts over.
const maxCachedTexts = 4096

// factCache memoises the facts parsed from tool results. A conversation
// sends every earlier tool result again on each turn, and parsing them with
// the fact grammar's regular expressions was the policy's main cost; the
// parse is a pure function of the text, so a cached answer is the same
// answer. A nil *factCache parses every time. It is safe for concurrent use.
type factCache struct {
	mu    sync.Mutex
	texts map[factKey][]parsedFact
}

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

func newFactCache() *factCache { return &factCache{texts: make(map[factKey][]parsedFact)} }

// facts returns the facts of a tool result's text; snippet says it is a
// search result. The returned slice is shared and must not be modified.
func (fc *factCache) facts(text string, snippet bool) []parsedFact {
	if fc == nil {
		return parseToolText(text, snippet)
	}
	k := factKey{text, snippet}
	fc.mu.Lock()
	out, ok := fc.texts[k]
	fc.mu.Unlock()
	if ok {
		return out
	}
	out = parseToolText(text, snippet)
	fc.mu.Lock()
	if len(fc.texts) >= maxCachedTexts {
		clear(fc.texts)
	}
	fc.texts[k] = out
	fc.mu.Unlock()
	return out
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
