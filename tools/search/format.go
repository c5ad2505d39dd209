package search

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxSnippetRunes bounds one snippet in the model's view; retriever and
// local hits carry whole passages.
const maxSnippetRunes = 600

// Format renders the results of one query as the model sees them: a
// heading line and a numbered Markdown list of title, link and snippet.
func Format(query string, results []Result) string {
	if len(results) == 0 {
		return "No results for " + strconv.Quote(query) + ".\n"
	}
	b := make([]byte, 0, 64+len(query)+len(results)*256)
	b = append(b, "Search results for "...)
	b = strconv.AppendQuote(b, query)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(len(results)), 10)
	b = append(b, "):\n\n"...)
	for i, r := range results {
		title := oneLine(r.Title)
		if title == "" {
			title = "(untitled)"
		}
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, ". ["...)
		b = append(b, title...)
		b = append(b, "]("...)
		b = append(b, oneLine(r.Link)...)
		b = append(b, ")\n"...)
		if s := oneLine(r.Snippet); s != "" {
			b = append(b, "   "...)
			b = append(b, clip(s, maxSnippetRunes)...)
			b = append(b, '\n')
		}
	}
	return string(b)
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
