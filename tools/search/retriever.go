package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mgrpo/mgrpo/tools/remote"
)

// Retriever queries a Search-R1-compatible retrieval server:
// POST /retrieve {"queries": [q], "topk": k, "return_scores": true} →
// {"result": [[{"document": {"id", "contents"}, "score"}]]}. The farm's own
// `mgrpo corpus serve` speaks the same API.
type Retriever struct{ httpProvider }

var _ Provider = (*Retriever)(nil)

// RetrieveRequest is the body of POST /retrieve.
type RetrieveRequest struct {
	Queries      []string `json:"queries"`
	TopK         int      `json:"topk"`
	ReturnScores bool     `json:"return_scores"`
}

// RetrieveDoc is one document of a /retrieve answer.
type RetrieveDoc struct {
	ID string `json:"id"`
	// URL is sent by `mgrpo corpus serve` for documents that have one;
	// Search-R1's own server does not send it.
	URL      string `json:"url,omitempty"`
	Contents string `json:"contents"`
}

// RetrieveHit is one scored hit of a /retrieve answer.
type RetrieveHit struct {
	Document RetrieveDoc `json:"document"`
	Score    float64     `json:"score"`
}

// Search implements Provider.
func (p *Retriever) Search(ctx context.Context, query string, n int) ([]Result, error) {
	r := p.client.R().SetContext(ctx).
		SetHeader("Content-Type", "application/json").
		SetBody(RetrieveRequest{Queries: []string{query}, TopK: clampN(n, 1000), ReturnScores: true})
	body, err := p.do(r, http.MethodPost, "/retrieve", retrieverMessage)
	if err != nil {
		return nil, err
	}
	return DecodeRetrieve(body, n)
}

// DecodeRetrieve decodes the first query's hits of a /retrieve answer,
// scored ({"document": …, "score": …}) or not (bare documents), into at
// most n results. The title is the first line of contents (wiki-18 puts it
// there, quoted) and the link is the document's url when the answer has
// one, else its id.
func DecodeRetrieve(body []byte, n int) ([]Result, error) {
	var resp struct {
		Result [][]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("retriever: %w: %w", remote.ErrDecode, err)
	}
	if len(resp.Result) == 0 {
		return nil, nil
	}
	out := make([]Result, 0, min(n, len(resp.Result[0])))
	for _, raw := range resp.Result[0] {
		if len(out) >= n {
			break
		}
		var hit struct {
			Document *RetrieveDoc `json:"document"`
			RetrieveDoc
		}
		if err := json.Unmarshal(raw, &hit); err != nil {
			return nil, fmt.Errorf("retriever: %w: %w", remote.ErrDecode, err)
		}
		doc := hit.RetrieveDoc
		if hit.Document != nil {
			doc = *hit.Document
		}
		title, text := SplitContents(doc.Contents)
		link := doc.ID
		if doc.URL != "" {
			link = doc.URL
		}
		out = append(out, Result{Title: title, Link: link, Snippet: text})
	}
	return out, nil
}

// SplitContents splits Search-R1 contents into title (first line, without
// surrounding quotes) and text (the rest).
func SplitContents(contents string) (title, text string) {
	title, text, _ = strings.Cut(contents, "\n")
	title = strings.TrimSpace(title)
	if len(title) >= 2 && title[0] == '"' && title[len(title)-1] == '"' {
		title = title[1 : len(title)-1]
	}
	return title, strings.TrimSpace(text)
}

// retrieverMessage reads FastAPI's {"detail": …} or a plain body.
func retrieverMessage(body []byte) string {
	var e struct {
		Detail any    `json:"detail"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		switch d := e.Detail.(type) {
		case string:
			return d
		case nil:
		default:
			b, _ := json.Marshal(d)
			return string(b)
		}
		if e.Error != "" {
			return e.Error
		}
	}
	return plainMessage(body)
}
