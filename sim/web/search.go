package web

import (
	"cmp"
	"slices"
	"strings"
)

// Result is one search hit.
type Result struct {
	// Title is the page's title.
	Title string `json:"title"`
	// Link is the absolute URL of the page: the base URL given to Search
	// followed by the page's path.
	Link string `json:"link"`
	// Snippet is a window of the page's visible text around the best match
	// of the query's terms; it may or may not hold the fact sought.
	Snippet string `json:"snippet"`
	// Position is the 1-based rank of the hit.
	Position int `json:"position"`
	// Score is the hit's BM25 score.
	Score float64 `json:"score"`
}

// Limits on a search: a query is cut to maxQueryTerms distinct terms and a
// request may ask for at most maxResults hits.
const (
	maxQueryTerms = 32
	maxResults    = 100
	snippetWords  = 28
	snippetLead   = 6
)

// Search ranks the web's pages against query with BM25 over their titles
// and visible text and returns at most n hits, best first. Links are
// baseURL (e.g. "http://127.0.0.1:8080", no trailing slash) followed by the
// page path. A query without known terms, or n ≤ 0, yields no hits. Search
// is safe for concurrent use.
func (w *World) Search(baseURL, query string, n int) []Result {
	rs, _ := w.search(baseURL, query, 0, n)
	return rs
}

// scratch is the per-call working memory of a search, pooled so that
// concurrent searches do not allocate a score array each.
type scratch struct {
	scores  []float64
	touched []int32
	terms   []int32
	hits    []hit
}

type hit struct {
	doc   int32
	score float64
}

// search returns the hits ranked offset+1 … offset+n and the number of
// pages matching at least one query term.
func (w *World) search(baseURL, query string, offset, n int) ([]Result, int) {
	n = min(n, maxResults)
	if n <= 0 || offset < 0 {
		return nil, 0
	}
	ix := w.index
	sc, _ := ix.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{scores: make([]float64, len(ix.docs))}
	}
	defer ix.pool.Put(sc)
	sc.terms = queryTerms(ix, query, sc.terms[:0])
	sc.touched = sc.touched[:0]
	for _, id := range sc.terms {
		sc.touched = ix.score(id, sc.scores, sc.touched)
	}
	sc.hits = sc.hits[:0]
	for _, d := range sc.touched {
		sc.hits = append(sc.hits, hit{d, sc.scores[d]})
		sc.scores[d] = 0
	}
	total := len(sc.hits)
	if offset >= total {
		return nil, total
	}
	slices.SortFunc(sc.hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.doc, b.doc)
	})
	hits := sc.hits[offset:min(total, offset+n)]
	out := make([]Result, len(hits))
	for i, h := range hits {
		p := ix.docs[h.doc]
		out[i] = Result{
			Title:    p.title,
			Link:     baseURL + p.path,
			Snippet:  ix.snippet(h.doc, sc.terms),
			Position: offset + i + 1,
			Score:    h.score,
		}
	}
	return out, total
}

// queryTerms appends the distinct known terms of query to dst.
func queryTerms(ix *bm25Index, query string, dst []int32) []int32 {
	tokenize(query, func(word string, _, _ int) {
		if len(dst) >= maxQueryTerms {
			return
		}
		if id, ok := ix.terms[word]; ok && !slices.Contains(dst, id) {
			dst = append(dst, id)
		}
	})
	return dst
}

// snippet picks the window of snippetWords words that covers the most
// distinct query terms (weighted by IDF), starting a few words before its
// first match, and returns its text with ellipses where it was cut.
func (ix *bm25Index) snippet(doc int32, terms []int32) string {
	toks := ix.tokens[doc]
	if len(toks) == 0 {
		return ""
	}
	bestStart, bestScore := 0, 0.0
	for i, t := range toks {
		if !slices.Contains(terms, t.term) {
			continue
		}
		var seen [maxQueryTerms]bool
		s := 0.0
		for _, u := range toks[i:min(len(toks), i+snippetWords-snippetLead)] {
			if k := slices.Index(terms, u.term); k >= 0 && !seen[k] {
				seen[k] = true
				s += ix.idf[u.term]
			}
		}
		if s > bestScore {
			bestStart, bestScore = i, s
		}
	}
	from := max(0, bestStart-snippetLead)
	to := min(len(toks), from+snippetWords)
	text := ix.docs[doc].text
	var b strings.Builder
	if from > 0 {
		b.WriteString("... ")
	}
	end := int(toks[to-1].end)
	if end < len(text) && text[end] == '.' {
		end++ // keep the full stop of a sentence cut at its last word
	}
	b.WriteString(strings.Join(strings.Fields(text[toks[from].start:end]), " "))
	if to < len(toks) {
		b.WriteString(" ...")
	}
	return b.String()
}
