package corpus

import (
	"context"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Hit is one scored document of a query.
type Hit struct {
	Doc
	Score float64
}

// Index is an opened corpus index. It is safe for concurrent use.
type Index struct {
	bi bleve.Index
}

// newMapping indexes title and text with the standard analyzer and BM25
// scoring, storing both so hits can be returned without the JSONL.
func newMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = "standard"
	text.Store = true
	text.IncludeTermVectors = false
	text.IncludeInAll = false
	doc := bleve.NewDocumentMapping()
	doc.AddFieldMappingsAt("title", text)
	doc.AddFieldMappingsAt("text", text)
	// The URL is returned with a hit but never searched.
	link := bleve.NewTextFieldMapping()
	link.Index = false
	link.Store = true
	link.IncludeInAll = false
	doc.AddFieldMappingsAt("url", link)
	doc.Dynamic = false
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultAnalyzer = "standard"
	m.ScoringModel = "bm25"
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false
	return m
}

// Open opens the index in dir read-only; several processes may share it.
func Open(dir string) (*Index, error) {
	bi, err := bleve.OpenUsing(dir, map[string]any{"read_only": true})
	if err != nil {
		return nil, fmt.Errorf("open corpus index %s: %w", dir, err)
	}
	return &Index{bi: bi}, nil
}

// Close releases the index.
func (ix *Index) Close() error { return ix.bi.Close() }

// Count returns the number of documents.
func (ix *Index) Count() (uint64, error) { return ix.bi.DocCount() }

// Search returns at most k documents matching q, best first; the title
// counts twice as much as the text. An empty or term-less query yields no
// hits.
func (ix *Index) Search(ctx context.Context, q string, k int) ([]Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	title := bleve.NewMatchQuery(q)
	title.SetField("title")
	title.SetBoost(2)
	text := bleve.NewMatchQuery(q)
	text.SetField("text")
	req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery([]query.Query{title, text}...), k, 0, false)
	req.Fields = []string{"title", "text", "url"}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search corpus: %w", err)
	}
	out := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		d := Doc{ID: h.ID}
		d.Title, _ = h.Fields["title"].(string)
		d.Text, _ = h.Fields["text"].(string)
		d.URL, _ = h.Fields["url"].(string)
		out = append(out, Hit{Doc: d, Score: h.Score})
	}
	return out, nil
}
