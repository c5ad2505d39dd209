package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode"

	"github.com/mgrpo/mgrpo/tools/remote"
)

// Serper queries serper.dev's Google search: POST /search with header
// X-API-KEY and body {q, gl, hl, num}.
type Serper struct{ httpProvider }

var _ Provider = (*Serper)(nil)

type serperRequest struct {
	Q   string `json:"q"`
	GL  string `json:"gl"`
	HL  string `json:"hl"`
	Num int    `json:"num"`
}

type serperResponse struct {
	Organic []struct {
		Title    string `json:"title"`
		Link     string `json:"link"`
		Snippet  string `json:"snippet"`
		Position int    `json:"position"`
	} `json:"organic"`
}

type serperError struct {
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
}

// Locale returns the (gl, hl) pair for query: China and simplified Chinese
// when the query holds CJK characters, else the United States and English.
func Locale(query string) (gl, hl string) {
	if HasCJK(query) {
		return "cn", "zh-cn"
	}
	return "us", "en"
}

// HasCJK reports whether s contains a Han, Hiragana, Katakana, Bopomofo or
// Hangul character.
func HasCJK(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Bopomofo, unicode.Hangul) {
			return true
		}
	}
	return false
}

// Search implements Provider.
func (p *Serper) Search(ctx context.Context, query string, n int) ([]Result, error) {
	gl, hl := Locale(query)
	r := p.client.R().SetContext(ctx).
		SetHeader("X-API-KEY", p.key).
		SetHeader("Content-Type", "application/json").
		SetBody(serperRequest{Q: query, GL: gl, HL: hl, Num: clampN(n, 100)})
	body, err := p.do(r, http.MethodPost, "/search", serperMessage)
	if err != nil {
		return nil, err
	}
	return DecodeSerper(body, n)
}

// DecodeSerper decodes a Serper answer into at most n results.
func DecodeSerper(body []byte, n int) ([]Result, error) {
	var resp serperResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("serper: %w: %w", remote.ErrDecode, err)
	}
	return firstResults(len(resp.Organic), n, func(i int) (Result, bool) {
		o := resp.Organic[i]
		return Result{Title: o.Title, Link: o.Link, Snippet: o.Snippet}, o.Link != "" || o.Title != ""
	}), nil
}

func serperMessage(body []byte) string {
	var e serperError
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	return plainMessage(body)
}
