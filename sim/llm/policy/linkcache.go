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

func newLinkCache() *linkCache { return newMemo[string, []foundLink](maxCachedTexts) }

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
