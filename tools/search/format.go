package search

import (
	"fmt"
	"strings"
)

// maxSnippetRunes bounds one snippet in the model's view; retriever and
// local hits carry whole passages.
const maxSnippetRunes = 600

// Format renders the results of one query as the model sees them: a
// heading line and a numbered Markdown list of title, link and snippet.
func Format(query string, results []Result) string {
	var b strings.Builder
	if len(results) == 0 {
		fmt.Fprintf(&b, "No results for %q.\n", query)
		return b.String()
	}
	fmt.Fprintf(&b, "Search results for %q (%d):\n\n", query, len(results))
	for i, r := range results {
		title := oneLine(r.Title)
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "%d. [%s](%s)\n", i+1, title, oneLine(r.Link))
		if s := oneLine(r.Snippet); s != "" {
			fmt.Fprintf(&b, "   %s\n", clip(s, maxSnippetRunes))
		}
	}
	return b.String()
}

// FormatError renders a failed query for the model.
func FormatError(query string, class, msg string) string {
	return fmt.Sprintf("Search for %q failed (%s): %s\n", query, class, msg)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
