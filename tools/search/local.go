package search

import (
	"context"
	"fmt"

	"github.com/mgrpo/mgrpo/tools/corpus"
)

// Local searches an embedded bleve corpus index in process.
type Local struct{ ix *corpus.Index }

var _ Provider = (*Local)(nil)

// NewLocal wraps an opened index.
func NewLocal(ix *corpus.Index) *Local { return &Local{ix: ix} }

// Name implements Provider.
func (*Local) Name() string { return "local" }

// Search implements Provider. The link of a hit is its document's url, or
// its id when it has none.
func (l *Local) Search(ctx context.Context, query string, n int) ([]Result, error) {
	hits, err := l.ix.Search(ctx, query, n)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	out := make([]Result, len(hits))
	for i, h := range hits {
		out[i] = Result{Title: h.Title, Link: h.Link(), Snippet: h.Text}
	}
	return out, nil
}

// Close releases the index.
func (l *Local) Close() error { return l.ix.Close() }
