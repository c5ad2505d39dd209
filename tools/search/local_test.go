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
	out := filepath.Join(dir, "ix")
	if _, err := corpus.Build(context.Background(), corpus.BuildConfig{In: in, Out: out}); err != nil {
		t.Fatal(err)
	}
	local, err := New(Config{Name: "local", Index: out})
	if err != nil {
		t.Fatal(err)
	}
	defer local.(*Local).Close()
	ix, err := corpus.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	srv := httptest.NewServer(corpus.Handler(ix, 3))
	defer srv.Close()
	remote, err := New(Config{Name: "retriever", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
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
