package search

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"

	"github.com/mgrpo/mgrpo/tools/remote"
)

// Brave queries the Brave Search API: GET /res/v1/web/search?q=…&count=…
// with header X-Subscription-Token.
type Brave struct{ httpProvider }

var _ Provider = (*Brave)(nil)

type braveResponse struct {
	Web struct {
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Description   string   `json:"description"`
			ExtraSnippets []string `json:"extra_snippets"`
		} `json:"results"`
	} `json:"web"`
}

type braveError struct {
	Error struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
		Status int    `json:"status"`
	} `json:"error"`
}

// Search implements Provider. Brave returns at most 20 results a request.
func (p *Brave) Search(ctx context.Context, query string, n int) ([]Result, error) {
	r := p.client.R().SetContext(ctx).
		SetHeader("Accept", "application/json").
		SetHeader("X-Subscription-Token", p.key).
		SetQueryParams(map[string]string{"q": query, "count": strconv.Itoa(clampN(n, 20))})
	body, err := p.do(r, http.MethodGet, "/res/v1/web/search", braveMessage)
	if err != nil {
		return nil, err
	}
	return DecodeBrave(body, n)
}

// DecodeBrave decodes a Brave answer into at most n results; markup in
// titles and descriptions is removed.
func DecodeBrave(body []byte, n int) ([]Result, error) {
	var resp braveResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("brave: %w: %w", remote.ErrDecode, err)
	}
	return firstResults(len(resp.Web.Results), n, func(i int) (Result, bool) {
		x := resp.Web.Results[i]
		if x.URL == "" && x.Title == "" {
			return Result{}, false
		}
		return Result{Title: html.UnescapeString(stripTags(x.Title)), Link: x.URL, Snippet: html.UnescapeString(stripTags(x.Description))}, true
	}), nil
}

func braveMessage(body []byte) string {
	var e braveError
	if json.Unmarshal(body, &e) == nil && (e.Error.Detail != "" || e.Error.Code != "") {
		if e.Error.Code != "" && e.Error.Detail != "" {
			return e.Error.Code + ": " + e.Error.Detail
		}
		return e.Error.Code + e.Error.Detail
	}
	return plainMessage(body)
}
