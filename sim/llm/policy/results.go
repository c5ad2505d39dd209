package policy

import (
	"encoding/json"
	"regexp"
	"strings"
)

// link is one search result as the executor reads it back from a tool
// message: where it points and the text shown with it.
type link struct {
	url   string
	title string
	text  string // title and snippet together
}

// searchResultsJSON covers the two JSON shapes a search tool may return
// verbatim: Serper's organic list and SearXNG's results list.
type searchResultsJSON struct {
	Organic []struct {
		Title   string `json:"title"`
		Link    string `json:"link"`
		Snippet string `json:"snippet"`
	} `json:"organic"`
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

var (
	markdownLink = regexp.MustCompile(`\[([^\]\n]*)\]\((https?://[^)\s]+)\)`)
	bareURL      = regexp.MustCompile(`https?://[^\s)"'\]<>]+`)
)

// parseLinks finds the results listed in a search tool's output: Serper or
// SearXNG JSON, a Markdown list of "[Title](URL)" followed by snippets, or,
// failing those, bare URLs with the line they sit on.
func parseLinks(text string) []link {
	var js searchResultsJSON
	if json.Unmarshal([]byte(strings.TrimSpace(text)), &js) == nil {
		var out []link
		for _, r := range js.Organic {
			if r.Link != "" {
				out = append(out, link{url: r.Link, title: r.Title, text: r.Title + "\n" + r.Snippet})
			}
		}
		for _, r := range js.Results {
			if r.URL != "" {
				out = append(out, link{url: r.URL, title: r.Title, text: r.Title + "\n" + r.Content})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if idx := markdownLink.FindAllStringSubmatchIndex(text, -1); len(idx) > 0 {
		out := make([]link, 0, len(idx))
		for i, m := range idx {
			end := len(text)
			if i+1 < len(idx) {
				end = idx[i+1][0]
			}
			out = append(out, link{
				url:   text[m[4]:m[5]],
				title: text[m[2]:m[3]],
				text:  text[m[2]:m[3]] + "\n" + text[m[1]:end],
			})
		}
		return out
	}
	var out []link
	for _, line := range strings.Split(text, "\n") {
		for _, u := range bareURL.FindAllString(line, -1) {
			out = append(out, link{url: strings.TrimRight(u, ".,;"), text: line})
		}
	}
	return out
}
