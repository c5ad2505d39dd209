package web

import (
	"strings"
	"sync"
	"testing"
)

// hopQuery is one hop of a question: the query an agent would type and the
// page that answers it.
type hopQuery struct {
	query, evidence string
}

func hopQueries(w *World) []hopQuery {
	var out []hopQuery
	for _, q := range w.Questions {
		subject := q.Chain.Entity
		for i, rel := range q.Chain.Relations {
			out = append(out, hopQuery{subject + " " + rel, q.EvidencePaths[i]})
			f, _, _ := w.byName[subject].fact(rel)
			subject = f.Object
		}
	}
	return out
}

// TestSearchTop3 measures how often a hop's evidence page ranks in the top
// three for the query "<entity> <relation>".
func TestSearchTop3(t *testing.T) {
	w := MustWorld(t)
	hops := hopQueries(w)
	top1, top3 := 0, 0
	for _, h := range hops {
		rs := w.Search("", h.query, 3)
		for i, r := range rs {
			if r.Link == h.evidence {
				top3++
				if i == 0 {
					top1++
				}
			}
		}
	}
	rate := float64(top3) / float64(len(hops))
	t.Logf("evidence page in top 3 for %d of %d hop queries (%.1f%%), first for %d", top3, len(hops), 100*rate, top1)
	if rate < 0.8 {
		t.Errorf("top-3 rate %.3f, want at least 0.8", rate)
	}
}

func TestSearch(t *testing.T) {
	w := MustWorld(t)
	e := w.Questions[0]
	tests := []struct {
		name    string
		query   string
		n       int
		wantMax int
		wantAny bool
	}{
		{"entity and relation", e.Chain.Entity + " " + e.Chain.Relations[0], 5, 5, true},
		{"upper case", strings.ToUpper(e.Chain.Entity), 10, 10, true},
		{"unknown words", "zzqx vvyy", 10, 0, false},
		{"empty", "", 10, 0, false},
		{"zero n", e.Chain.Entity, 0, 0, false},
		{"negative n", e.Chain.Entity, -3, 0, false},
		{"huge n is capped", "the", 1 << 30, maxResults, true},
		{"punctuation only", "?!.,;", 10, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := w.Search("http://h", tt.query, tt.n)
			if len(rs) > tt.wantMax {
				t.Errorf("got %d results, want at most %d", len(rs), tt.wantMax)
			}
			if got := len(rs) > 0; got != tt.wantAny {
				t.Errorf("got results %v, want %v", got, tt.wantAny)
			}
			for i, r := range rs {
				if got, want := r.Position, i+1; got != want {
					t.Errorf("result %d: position %d, want %d", i, got, want)
				}
				if i > 0 && r.Score > rs[i-1].Score {
					t.Errorf("result %d scores %f above result %d's %f", i, r.Score, i-1, rs[i-1].Score)
				}
				if !strings.HasPrefix(r.Link, "http://h/") {
					t.Errorf("link %q lacks the base URL", r.Link)
				}
				if r.Snippet == "" || r.Title == "" {
					t.Errorf("result %d: empty title or snippet: %+v", i, r)
				}
			}
		})
	}
}

func TestSearchSnippetHasFact(t *testing.T) {
	w := MustWorld(t)
	hops := hopQueries(w)
	withFact := 0
	for _, h := range hops {
		rs := w.Search("", h.query, 1)
		if len(rs) == 1 && len(ParseFacts(rs[0].Snippet)) > 0 {
			withFact++
		}
	}
	if withFact == 0 || withFact == len(hops) {
		t.Errorf("%d of %d top snippets hold a fact sentence; want some but not all", withFact, len(hops))
	}
}

func TestSearchDistractorsNearby(t *testing.T) {
	w := MustWorld(t)
	near, total := 0, 0
	for _, e := range w.entities {
		if e.distractor || len(e.twins) == 0 {
			continue
		}
		total++
		for _, r := range w.Search("", e.name+" "+e.facts[0].Relation, 5) {
			if r.Link == e.twins[0].path {
				near++
				break
			}
		}
	}
	if total == 0 || float64(near) < 0.5*float64(total) {
		t.Errorf("a distractor ranks in the top 5 for %d of %d entities that have one; want at least half", near, total)
	}
}

func TestSearchConcurrent(t *testing.T) {
	w := MustWorld(t)
	hops := hopQueries(w)
	want := make([][]Result, len(hops))
	for i, h := range hops {
		want[i] = w.Search("", h.query, 5)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(hops))
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < len(hops); i += 8 {
				got := w.Search("", hops[i].query, 5)
				if len(got) != len(want[i]) || (len(got) > 0 && got[0] != want[i][0]) {
					errs <- hops[i].query
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for q := range errs {
		t.Errorf("concurrent search for %q differs from sequential", q)
	}
}

func FuzzSearch(f *testing.F) {
	w := MustWorld(f)
	f.Add("Velmora Labs founder", 10)
	f.Add("", 0)
	f.Add("ÄÖÜ ß İstanbul \x00\xff", 3)
	f.Add(strings.Repeat("the of is ", 100), 1000)
	f.Fuzz(func(t *testing.T, q string, n int) {
		rs := w.Search("http://h", q, n)
		if len(rs) > max(n, 0) {
			t.Errorf("Search(%q, %d) returned %d results", q, n, len(rs))
		}
	})
}

func BenchmarkSearch(b *testing.B) {
	w := MustWorld(b)
	hops := hopQueries(w)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.Search("http://h", hops[i%len(hops)].query, 10)
		i++
	}
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(Config{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
