package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mgrpo/mgrpo/tools/remote"
)

// SearXNG queries a SearXNG instance: GET /search?q=…&format=json (the
// instance must enable the json format).
type SearXNG struct{ httpProvider }

var _ Provider = (*SearXNG)(nil)

type searxResponse struct {
	Results []struct {
		URL     string `json:"url"`
		Title   string `json:"title"`
		Content string `json:"content"`
	} `json:"results"`
}

// Search implements Provider.
func (p *SearXNG) Search(ctx context.Context, query string, n int) ([]Result, error) {
	r := p.client.R().SetContext(ctx).
		SetHeader("Accept", "application/json").
		SetQueryParams(map[string]string{"q": query, "format": "json", "pageno": "1"})
	body, err := p.do(r, http.MethodGet, "/search", plainMessage)
	if err != nil {
		return nil, err
	}
	return DecodeSearXNG(body, n)
}

// DecodeSearXNG decodes a SearXNG answer into at most n results.
func DecodeSearXNG(body []byte, n int) ([]Result, error) {
	var resp searxResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("searxng: %w: %w", remote.ErrDecode, err)
	}
	return firstResults(len(resp.Results), n, func(i int) (Result, bool) {
		x := resp.Results[i]
		return Result{Title: x.Title, Link: x.URL, Snippet: x.Content}, x.URL != "" || x.Title != ""
	}), nil
}

// plainMessage returns a body's text for an error message, collapsing
// whitespace and dropping markup.
func plainMessage(body []byte) string {
	return strings.Join(strings.Fields(stripTags(string(body))), " ")
}

// stripTags removes <…> markup (Brave wraps matches in <strong>).
func stripTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
