package search

import (
	"fmt"
	"strings"
	"unicode/utf8"
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

// oneLine collapses every run of white space in s to one space and trims
// the ends. Titles and snippets are usually already on one line, so those
// are returned as they are, without building a new string.
func oneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isOneLine reports whether s is ASCII without leading, trailing or
// repeated spaces or any other white space (oneLine's output unchanged).
func isOneLine(s string) bool {
	prevSpace := true // a leading space is not one line
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return false
		case c == ' ':
			if prevSpace {
				return false
			}
			prevSpace = true
		case c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			return false
		default:
			prevSpace = false
		}
	}
	return !prevSpace || s == ""
}

// clip cuts s to n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
