package search

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/web"
)

func TestSerperCJKLocaleSwitch(t *testing.T) {
	cases := []struct {
		query, gl, hl string
	}{
		{"capital of France", "us", "en"},
		{"北京的人口是多少", "cn", "zh-cn"},
		{"Velmora Labs 创始人", "cn", "zh-cn"},
		{"東京タワー", "cn", "zh-cn"},
		{"서울 인구", "cn", "zh-cn"},
		{"café crème", "us", "en"},
	}
	rec := &recorder{}
	srv := httptest.NewServer(serperFake(scEmpty, rec))
	defer srv.Close()
	p, err := New(Config{Name: "serper", BaseURL: srv.URL, Getenv: func(string) string { return testKey }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if _, err := p.Search(context.Background(), c.query, 5); err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		rec.mu.Lock()
		got := rec.last
		rec.mu.Unlock()
		if got["gl"] != c.gl || got["hl"] != c.hl || got["q"] != c.query || got["num"] != "5" {
			t.Errorf("%q: sent %v, want gl=%s hl=%s", c.query, got, c.gl, c.hl)
		}
	}
}

func simWorld(tb testing.TB) *web.World {
	tb.Helper()
	w, err := web.Generate(web.Config{Seed: 11})
	if err != nil {
		tb.Fatalf("Generate: %v", err)
	}
	return w
}

// TestAgainstSimWeb runs serper and searxng against the synthetic web and
// checks that a question's subject finds pages of the served web.
func TestAgainstSimWeb(t *testing.T) {
	w := simWorld(t)
	srv := httptest.NewServer(w.Handler(web.WithAPIKey(testKey)))
	defer srv.Close()
	q := w.Questions[0]
	subject := q.Chain.Entity
	for _, name := range []string{"serper", "searxng"} {
		t.Run(name, func(t *testing.T) {
			p, err := New(Config{Name: name, BaseURL: srv.URL, Getenv: func(string) string { return testKey }})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Search(context.Background(), subject, 5)
			if err != nil {
				t.Fatalf("Search(%q): %v", subject, err)
			}
			if len(got) == 0 || len(got) > 5 {
				t.Fatalf("Search(%q) returned %d results", subject, len(got))
			}
			for _, r := range got {
				if !strings.HasPrefix(r.Link, srv.URL+"/site/") || r.Title == "" {
					t.Errorf("result %+v does not point into the sim web", r)
				}
			}
			out := Format(subject, got)
			if !strings.Contains(out, "1. [") {
				t.Errorf("Format output lacks a numbered list:\n%s", out)
			}
		})
	}
	t.Run("serper-wrong-key", func(t *testing.T) {
		p, _ := New(Config{Name: "serper", BaseURL: srv.URL, Getenv: func(string) string { return "wrong-key-123" }})
		_, err := p.Search(context.Background(), subject, 5)
		if err == nil || strings.Contains(err.Error(), "wrong-key-123") {
			t.Fatalf("err = %v, want a 403 without the key", err)
		}
	})
}
