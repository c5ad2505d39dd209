package tools

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools/visit"
)

func TestRunCommandsAgainstSimWeb(t *testing.T) {
	w, err := web.Generate(web.Config{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	const key = "serper-secret-key-77"
	srv := httptest.NewServer(w.Handler(web.WithAPIKey(key)))
	defer srv.Close()
	env := func(k string) string {
		if k == "SERPER_API_KEY" {
			return key
		}
		return ""
	}
	q := w.Questions[0]

	var out bytes.Buffer
	err = RunSearchCommand(context.Background(), SearchCommand{Provider: "serper", SearchURL: srv.URL, Queries: []string{q.Chain.Entity, "另一个查询"}, Getenv: env}, &out)
	if err != nil {
		t.Fatalf("search: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "1. [") || strings.Contains(out.String(), key) {
		t.Errorf("search output:\n%s", out.String())
	}

	out.Reset()
	err = RunSearchCommand(context.Background(), SearchCommand{Provider: "serper", SearchURL: srv.URL, Queries: []string{"x"}, Getenv: func(string) string { return "bad-key-000" }}, &out)
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(out.String(), "failed (auth)") || strings.Contains(out.String(), "bad-key-000") {
		t.Errorf("bad key: err %v, output %q", err, out.String())
	}
	if err := RunSearchCommand(context.Background(), SearchCommand{Provider: "serper", Queries: []string{"x"}, Getenv: func(string) string { return "" }}, &out); err == nil || errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "SERPER_API_KEY") {
		t.Errorf("missing key: %v", err)
	}

	out.Reset()
	page := srv.URL + q.EvidencePaths[0]
	if err := RunVisitCommand(context.Background(), VisitCommand{URLs: []string{page}, Goal: "g"}, &out); !errors.Is(err, ErrToolFailed) || !strings.Contains(out.String(), "refused") {
		t.Errorf("visit without allow-host: err %v, output %q", err, out.String())
	}
	out.Reset()
	if err := RunVisitCommand(context.Background(), VisitCommand{URLs: []string{page}, Goal: "g", AllowHosts: []string{srv.Listener.Addr().String()}}, &out); err != nil {
		t.Fatalf("visit: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), q.Chain.Entity) {
		t.Errorf("visit output lacks %q:\n%s", q.Chain.Entity, out.String())
	}
}

// goalSummarizer answers every goal with a fixed summary, counting calls.
type goalSummarizer struct{ calls int }

func (g *goalSummarizer) Summarize(_ context.Context, goal, content string) (visit.Extraction, error) {
	g.calls++
	return visit.Extraction{Rational: "whole page", Evidence: content[:min(len(content), 20)], Summary: "summary for " + goal}, nil
}

// TestVisitCommandUsesTheCallersSummarizer: the visit command builds no
// model client; the summarizer it is given reads the page for the goal.
func TestVisitCommandUsesTheCallersSummarizer(t *testing.T) {
	w, err := web.Generate(web.Config{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	s := &goalSummarizer{}
	var out bytes.Buffer
	page := srv.URL + w.Questions[0].EvidencePaths[0]
	err = RunVisitCommand(context.Background(), VisitCommand{URLs: []string{page}, Goal: "the founder",
		AllowHosts: []string{srv.Listener.Addr().String()}, Summarizer: s}, &out)
	if err != nil {
		t.Fatalf("visit: %v\n%s", err, out.String())
	}
	if s.calls == 0 || !strings.Contains(out.String(), "summary for the founder") {
		t.Errorf("summarizer calls %d, output:\n%s", s.calls, out.String())
	}
}
