package web

import (
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters, the usual values for web-like text.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// titleWeight counts title terms this many times, as a search engine
	// weighs the title field above the body.
	titleWeight = 3
)

// bm25Index is an inverted index of every page's title and visible text.
// It is built once and only read afterwards, so it is safe for concurrent
// use.
type bm25Index struct {
	docs     []*page
	terms    map[string]int32
	postings [][]posting // per term, ascending doc
	idf      []float64   // per term
	norm     []float64   // per doc: k1 * (1 - b + b*len/avglen)
	tokens   [][]token   // per doc: the body tokens, for snippets
	pool     sync.Pool   // *scratch buffers sized for docs
}

type posting struct {
	doc int32
	tf  float32
}

// token is one word of a page's text: its term id and byte span.
type token struct {
	term       int32
	start, end int32
}

// tokenize calls fn for every word of s: a maximal run of letters and
// digits, lowercased. It allocates only the lowercased words that differ
// from their source.
func tokenize(s string, fn func(word string, start, end int)) {
	start := -1
	lower := true
	flush := func(end int) {
		if start < 0 {
			return
		}
		word := s[start:end]
		if !lower {
			word = toLower(word)
		}
		fn(word, start, end)
		start, lower = -1, true
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			if r >= utf8.RuneSelf || unicode.IsUpper(r) {
				lower = false
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
}

func toLower(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		b = append(b, unicode.ToLower(r))
	}
	return string(b)
}

// buildIndex indexes every page of w in path order.
func buildIndex(w *World) *bm25Index {
	ix := &bm25Index{terms: make(map[string]int32)}
	termOf := func(word string) int32 {
		id, ok := ix.terms[word]
		if !ok {
			id = int32(len(ix.postings))
			ix.terms[word] = id
			ix.postings = append(ix.postings, nil)
		}
		return id
	}
	lengths := make([]float64, 0, len(w.paths))
	total := 0.0
	for _, path := range w.paths {
		p := w.pages[path]
		doc := int32(len(ix.docs))
		ix.docs = append(ix.docs, p)
		tf := make(map[int32]float32)
		n := 0
		tokenize(p.title, func(word string, _, _ int) {
			tf[termOf(word)] += titleWeight
			n += titleWeight
		})
		var toks []token
		tokenize(p.text, func(word string, start, end int) {
			id := termOf(word)
			tf[id]++
			n++
			toks = append(toks, token{term: id, start: int32(start), end: int32(end)})
		})
		ix.tokens = append(ix.tokens, toks)
		// Terms are appended in first-seen order per doc; docs are visited
		// in order, so every posting list stays sorted by doc.
		for id, f := range tf {
			ix.postings[id] = append(ix.postings[id], posting{doc: doc, tf: f})
		}
		lengths = append(lengths, float64(n))
		total += float64(n)
	}
	avg := total / float64(max(1, len(lengths)))
	ix.norm = make([]float64, len(lengths))
	for i, l := range lengths {
		ix.norm[i] = bm25K1 * (1 - bm25B + bm25B*l/avg)
	}
	n := float64(len(ix.docs))
	ix.idf = make([]float64, len(ix.postings))
	for id, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[id] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	return ix
}

// score adds the BM25 contribution of term id to scores, recording in
// touched the docs it scores for the first time.
func (ix *bm25Index) score(id int32, scores []float64, touched []int32) []int32 {
	idf := ix.idf[id]
	for _, p := range ix.postings[id] {
		tf := float64(p.tf)
		if scores[p.doc] == 0 {
			touched = append(touched, p.doc)
		}
		scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + ix.norm[p.doc])
	}
	return touched
}
