package policy

import "strings"

// linkCache memoises the links parsed from search results, with their
// lower-cased title and text, which relevance checks for every hop (see
// memo).
type linkCache = memo[string, []foundLink]

// foundLink is a link with the lower-cased forms containsLowered takes.
type foundLink struct {
	link
	lowTitle, lowText string
}

// newLinkCache returns a link cache of at most maxBytes. An entry costs its
// text plus its links' strings (counted whole, though some are substrings
// of the text) and headers.
func newLinkCache(maxBytes int64) *linkCache {
	return newMemo(maxBytes, func(text string, ls []foundLink) int {
		n := len(text)
		for _, l := range ls {
			n += 80 + len(l.url) + len(l.title) + len(l.text) + len(l.lowTitle) + len(l.lowText)
		}
		return n
	})
}

// links returns the links of a search result's text through lc. The
// returned slice is shared and must not be modified.
func links(lc *linkCache, text string) []foundLink { return lc.get(text, findLinks) }

// findLinks is parseLinks with each link's lower-cased forms.
func findLinks(text string) []foundLink {
	ls := parseLinks(text)
	out := make([]foundLink, len(ls))
	for i, l := range ls {
		out[i] = foundLink{link: l, lowTitle: strings.ToLower(l.title), lowText: strings.ToLower(l.text)}
	}
	return out
}
