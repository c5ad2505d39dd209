package web

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestGenerateDeterministic(t *testing.T) {
	a := MustGenerate(t, Config{Seed: 42, Questions: 50})
	b := MustGenerate(t, Config{Seed: 42, Questions: 50})
	if !reflect.DeepEqual(a.Questions, b.Questions) {
		t.Errorf("same seed: questions differ")
	}
	if got, want := a.Paths(), b.Paths(); !reflect.DeepEqual(got, want) {
		t.Fatalf("same seed: %d paths, want %d", len(got), len(want))
	}
	for _, p := range a.Paths() {
		if got, want := a.pages[p].html, b.pages[p].html; got != want {
			t.Errorf("same seed: page %s HTML differs", p)
		}
	}
	c := MustGenerate(t, Config{Seed: 43, Questions: 50})
	if reflect.DeepEqual(a.Questions, c.Questions) {
		t.Errorf("seeds 42 and 43 gave identical questions")
	}
	if reflect.DeepEqual(a.Paths(), c.Paths()) {
		t.Errorf("seeds 42 and 43 gave identical page paths")
	}
}

func TestGenerateQuestionCountKeepsWorld(t *testing.T) {
	small := MustGenerate(t, Config{Seed: 5, Questions: 20})
	large := MustGenerate(t, Config{Seed: 5, Questions: 120})
	if got, want := large.Questions[:20], small.Questions; !reflect.DeepEqual(got, want) {
		t.Errorf("first 20 of 120 questions differ from the 20 of a 20-question world")
	}
	for _, p := range small.Paths() {
		if got, want := large.pages[p], small.pages[p]; got == nil || got.html != want.html {
			t.Errorf("page %s differs between question counts", p)
		}
	}
}

func TestGenerateConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
		sites   int
		qs      int
	}{
		{"defaults", Config{Seed: 1}, false, DefaultSites, DefaultQuestions},
		{"one site", Config{Seed: 1, Sites: 1, Questions: 30}, false, 1, 30},
		{"two sites", Config{Seed: 1, Sites: 2, Questions: 30}, false, 2, 30},
		{"negative sites", Config{Sites: -1}, true, 0, 0},
		{"negative questions", Config{Questions: -5}, true, 0, 0},
		{"more questions than the world holds", Config{Seed: 1, Sites: 1, EntitiesPerKind: 1, Questions: 500}, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Generate(tt.cfg)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Generate(%+v) = nil error, want one", tt.cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Generate(%+v): %v", tt.cfg, err)
			}
			if got := len(w.sites); got != tt.sites {
				t.Errorf("sites: got %d, want %d", got, tt.sites)
			}
			if got := len(w.Questions); got != tt.qs {
				t.Errorf("questions: got %d, want %d", got, tt.qs)
			}
		})
	}
	if _, err := Generate(Config{Sites: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("negative sites: got %v, want ErrConfig", err)
	}
}

// TestFactsConsistent parses every page and checks that each fact found is
// one the world asserts: no filler sentence takes the fact shape, and one
// subject and relation never have two objects.
func TestFactsConsistent(t *testing.T) {
	w := MustWorld(t)
	want := make(map[[2]string]string)
	for _, e := range w.entities {
		for _, f := range e.facts {
			key := [2]string{f.Subject, f.Relation}
			if _, dup := want[key]; dup {
				t.Fatalf("two facts for %v", key)
			}
			want[key] = f.Object
		}
	}
	stated := make(map[[2]string]bool)
	for _, p := range w.Paths() {
		text, _ := w.PageText(p)
		for _, f := range ParseFacts(text) {
			key := [2]string{f.Subject, f.Relation}
			if got, ok := want[key]; !ok || got != f.Object {
				t.Errorf("page %s states %q; world has %q", p, FactSentence(f), got)
			}
			stated[key] = true
		}
	}
	if got, want := len(stated), len(want); got != want {
		t.Errorf("facts stated on pages: got %d, want %d", got, want)
	}
}

func TestNamesFollowGrammar(t *testing.T) {
	w := MustWorld(t)
	for _, e := range w.entities {
		if strings.Contains(e.name, " of ") || strings.Contains(e.name, ".") || !strings.ContainsAny(e.name[:1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") {
			t.Errorf("entity name %q breaks the grammar", e.name)
		}
		for _, f := range e.facts {
			if strings.ContainsAny(f.Object, ".\n") {
				t.Errorf("object %q of %s breaks the grammar", f.Object, e.name)
			}
		}
	}
	distractors := 0
	for _, e := range w.entities {
		if e.distractor {
			distractors++
		}
	}
	if distractors == 0 {
		t.Errorf("world has no distractors")
	}
}

// TestGenerateBackgroundKeepsWorld checks that background sentences only
// lengthen pages: the questions and page paths are the same, and every page
// states exactly the facts it stated before.
func TestGenerateBackgroundKeepsWorld(t *testing.T) {
	plain := MustGenerate(t, Config{Seed: 5, Questions: 40})
	long := MustGenerate(t, Config{Seed: 5, Questions: 40, BackgroundSentences: 20})
	if !reflect.DeepEqual(plain.Questions, long.Questions) {
		t.Fatal("background sentences changed the questions")
	}
	if !reflect.DeepEqual(plain.Paths(), long.Paths()) {
		t.Fatal("background sentences changed the pages")
	}
	var before, after int
	for _, p := range plain.Paths() {
		a, _ := plain.PageText(p)
		b, _ := long.PageText(p)
		before, after = before+len(a), after+len(b)
		if !reflect.DeepEqual(ParseFacts(a), ParseFacts(b)) {
			t.Errorf("page %s states other facts with background sentences", p)
		}
	}
	if after < before+before/4 {
		t.Errorf("pages grew from %d to only %d bytes", before, after)
	}
	if _, err := Generate(Config{BackgroundSentences: -1}); err == nil {
		t.Error("negative BackgroundSentences accepted")
	}
}
