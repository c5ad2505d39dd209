package search

import (
	"fmt"
	"strings"
	"testing"
)

func fuzzDecoder(f *testing.F, decode func([]byte, int) ([]Result, error), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		n = n%50 + 1
		if n < 1 {
			n = 1
		}
		got, err := decode(body, n)
		if err != nil {
			return
		}
		if len(got) > n {
			t.Fatalf("decoder returned %d results for n=%d", len(got), n)
		}
		_ = Format("q", got)
	})
}

func FuzzDecodeSerper(f *testing.F) {
	fuzzDecoder(f, DecodeSerper,
		`{"searchParameters":{"q":"x"},"organic":[{"title":"a","link":"http://a","snippet":"s","position":1}]}`,
		`{"organic":null}`, `{"message":"Unauthorized.","statusCode":403}`, `[]`, ``)
}

func FuzzDecodeSearXNG(f *testing.F) {
	fuzzDecoder(f, DecodeSearXNG,
		`{"query":"x","results":[{"url":"http://a","title":"a","content":"c","score":1}],"unresponsive_engines":[]}`,
		`{"results":[{}]}`, `<html>`)
}

func FuzzDecodeBrave(f *testing.F) {
	fuzzDecoder(f, DecodeBrave,
		`{"type":"search","web":{"results":[{"title":"<strong>a</strong>","url":"http://a","description":"d &amp; e"}]}}`,
		`{"type":"ErrorResponse","error":{"code":"RATE_LIMITED"}}`, `{"web":null}`)
}

func FuzzDecodeTavily(f *testing.F) {
	fuzzDecoder(f, DecodeTavily,
		`{"query":"x","results":[{"title":"a","url":"http://a","content":"c","score":0.5}],"response_time":1}`,
		`{"detail":{"error":"bad"}}`)
}

func FuzzDecodeRetrieve(f *testing.F) {
	fuzzDecoder(f, DecodeRetrieve,
		`{"result":[[{"document":{"id":"1","contents":"\"T\"\nbody"},"score":1.5}]]}`,
		`{"result":[[{"id":"1","contents":"x"}]]}`, `{"result":[]}`, `{"result":[[1]]}`)
}

func FuzzErrorMessages(f *testing.F) {
	for _, s := range []string{`{"message":"m"}`, `{"detail":{"error":"e"}}`, `{"detail":[1]}`, `{"error":{"code":"c","detail":"d"}}`, `<b>x</b>`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = serperMessage(body)
		_ = braveMessage(body)
		_ = tavilyMessage(body)
		_ = retrieverMessage(body)
	})
}

// FuzzOneLine checks the one-line fast path against the general rule.
func FuzzOneLine(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", " a", "a ", "a  b", "a\tb", "é b", "a\u00a0b", "x\u2028y", "ok fine."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := oneLine(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Fatalf("oneLine(%q) = %q, want %q", s, got, want)
		}
	})
}

// formatWithFmt is Format as first written with fmt, the oracle for the
// hand-built one.
func formatWithFmt(query string, results []Result) string {
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

func FuzzFormat(f *testing.F) {
	f.Add("q", "Title", "https://x.example/a", "snippet", 3)
	f.Add("東京 \"quoted\"\n", "", " ", "\xff bad", 0)
	f.Add("long", "t", "l", strings.Repeat("word ", 200), 12)
	f.Fuzz(func(t *testing.T, q, title, link, snippet string, n int) {
		if n < 0 || n > 20 {
			return
		}
		rs := make([]Result, n)
		for i := range rs {
			rs[i] = Result{Title: title, Link: link, Snippet: snippet}
			if i%2 == 1 {
				rs[i].Title, rs[i].Snippet = "", title
			}
		}
		if got, want := Format(q, rs), formatWithFmt(q, rs); got != want {
			t.Fatalf("Format = %q, fmt version %q", got, want)
		}
	})
}
