package search

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/tools/corpus"
)

// TestLocalAndRetrieverShareOneIndex builds a small corpus and checks that
// the in-process local provider and the retriever provider talking to
// `corpus serve`'s handler return the same hits.
func TestLocalAndRetrieverShareOneIndex(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "c.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := corpus.GenerateJSONL(f, 500, 2, false); err != nil {
		t.Fatal(err)
	}
	f.Close()
	local, ix, remote := localAndRetriever(t, in)
	// Use a title word of document 42 to have a known hit.
	hits, _ := ix.Search(context.Background(), "42", 1)
	if len(hits) == 0 {
		t.Fatal("no hit for 42")
	}
	q := hits[0].Title
	a, err := local.Search(context.Background(), q, 4)
	if err != nil || len(a) == 0 || a[0].Link != "42" {
		t.Fatalf("local: %+v, %v", a, err)
	}
	b, err := remote.Search(context.Background(), q, 4)
	if err != nil || len(b) != len(a) {
		t.Fatalf("retriever: %+v, %v", b, err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("hit %d differs: local %+v, retriever %+v", i, a[i], b[i])
		}
	}
	if _, err := New(Config{Name: "local"}); err == nil {
		t.Error("local without index accepted")
	}
}

// TestLocalAndRetrieverLinkToURLs checks that a document indexed with a url
// is linked by that url, through both providers, and one without by its id.
func TestLocalAndRetrieverLinkToURLs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "c.jsonl")
	lines := `{"id": "d1", "url": "https://example.org/zebra", "title": "Zebra stripes", "text": "Zebra stripes deter flies."}
{"url": "https://example.org/okapi", "title": "Okapi zebra cousin", "text": "The okapi has zebra legs."}
{"id": "d3", "title": "Zebra crossing", "text": "A zebra crossing is a road marking."}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	local, _, retriever := localAndRetriever(t, in)
	want := map[string]string{"Zebra stripes": "https://example.org/zebra", "Okapi zebra cousin": "https://example.org/okapi", "Zebra crossing": "d3"}
	for _, p := range []Provider{local, retriever} {
		hits, err := p.Search(context.Background(), "zebra", 10)
		if err != nil || len(hits) != 3 {
			t.Fatalf("%s: %+v, %v", p.Name(), hits, err)
		}
		for _, h := range hits {
			if h.Link != want[h.Title] {
				t.Errorf("%s: %q links to %q, want %q", p.Name(), h.Title, h.Link, want[h.Title])
			}
		}
	}
}

// localAndRetriever indexes the JSONL corpus at in and returns the local
// provider over the index, the opened index, and the retriever provider
// talking to `corpus serve`'s handler over the same index; all are closed
// when the test ends.
func localAndRetriever(t *testing.T, in string) (local Provider, ix *corpus.Index, retriever Provider) {
	t.Helper()
	out := filepath.Join(filepath.Dir(in), "ix")
	if _, err := corpus.Build(context.Background(), corpus.BuildConfig{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	local, err := New(Config{Name: "local", Index: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.(*Local).Close() })
	ix, err = corpus.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	srv := httptest.NewServer(corpus.Handler(ix, 3))
	t.Cleanup(srv.Close)
	retriever, err = New(Config{Name: "retriever", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return local, ix, retriever
}
