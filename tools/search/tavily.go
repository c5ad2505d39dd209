package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mgrpo/mgrpo/tools/remote"
)

// Tavily queries the Tavily search API: POST /search with the key as a
// bearer token and body {query, max_results, search_depth}.
type Tavily struct{ httpProvider }

var _ Provider = (*Tavily)(nil)

type tavilyRequest struct {
	Query       string `json:"query"`
	MaxResults  int    `json:"max_results"`
	SearchDepth string `json:"search_depth"`
}

type tavilyResponse struct {
	Results []struct {
		Title   string  `json:"title"`
		URL     string  `json:"url"`
		Content string  `json:"content"`
		Score   float64 `json:"score"`
	} `json:"results"`
}

// Search implements Provider. Tavily returns at most 20 results.
func (p *Tavily) Search(ctx context.Context, query string, n int) ([]Result, error) {
	r := p.client.R().SetContext(ctx).
		SetAuthToken(p.key).
		SetHeader("Content-Type", "application/json").
		SetBody(tavilyRequest{Query: query, MaxResults: clampN(n, 20), SearchDepth: "basic"})
	body, err := p.do(r, http.MethodPost, "/search", tavilyMessage)
	if err != nil {
		return nil, err
	}
	return DecodeTavily(body, n)
}

// DecodeTavily decodes a Tavily answer into at most n results.
func DecodeTavily(body []byte, n int) ([]Result, error) {
	var resp tavilyResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("tavily: %w: %w", remote.ErrDecode, err)
	}
	return firstResults(len(resp.Results), n, func(i int) (Result, bool) {
		x := resp.Results[i]
		return Result{Title: x.Title, Link: x.URL, Snippet: x.Content}, x.URL != "" || x.Title != ""
	}), nil
}

// tavilyMessage reads {"detail": {"error": "…"}} (or a plain detail string).
func tavilyMessage(body []byte) string {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Detail) > 0 {
		var inner struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(e.Detail, &inner) == nil && inner.Error != "" {
			return inner.Error
		}
		var s string
		if json.Unmarshal(e.Detail, &s) == nil && s != "" {
			return s
		}
	}
	return plainMessage(body)
}
