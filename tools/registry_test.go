package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools/search"
)

// staticProvider answers every query with one fixed hit.
type staticProvider struct{}

func (staticProvider) Name() string { return "static" }
func (staticProvider) Search(_ context.Context, q string, _ int) ([]search.Result, error) {
	return []search.Result{{Title: "About " + q, Link: "https://example.org/" + q, Snippet: "text"}}, nil
}

type panicTool struct{}

func (panicTool) Spec() Spec {
	return Spec{Name: "boom", Description: "panics", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (panicTool) Call(context.Context, json.RawMessage) Observation { panic("kaboom") }

func mustRegistry(tb testing.TB, m *Metrics, ts ...Tool) *Registry {
	tb.Helper()
	r, err := NewRegistry(ts, WithMetrics(m), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatalf("NewRegistry: %v", err)
	}
	return r
}

func TestRegistryValidatesArguments(t *testing.T) {
	st, err := NewSearch(SearchConfig{Provider: staticProvider{}, MaxQueries: 3})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	r := mustRegistry(t, m, st, panicTool{})
	cases := []struct {
		name, tool, args string
		class            failure.Class
		wantText         []string
	}{
		{"ok", "search", `{"query":["alpha","beta"]}`, failure.ClassOK, []string{`Search results for "alpha"`, `Search results for "beta"`, "1. [About alpha](https://example.org/alpha)"}},
		{"string-not-array", "search", `{"query":"alpha"}`, failure.ClassInvalidArgs, []string{"Invalid arguments for search", "'/query'", "array"}},
		{"missing", "search", `{}`, failure.ClassInvalidArgs, []string{"missing", "query"}},
		{"too-many", "search", `{"query":["a","b","c","d"]}`, failure.ClassInvalidArgs, []string{"'/query'", "want 3"}},
		{"empty-item", "search", `{"query":[""]}`, failure.ClassInvalidArgs, []string{"'/query/0'"}},
		{"extra-prop", "search", `{"query":["a"],"num":3}`, failure.ClassInvalidArgs, []string{"num"}},
		{"not-json", "search", `{"query": [`, failure.ClassInvalidArgs, []string{"not valid JSON"}},
		{"unknown-tool", "browse", `{}`, failure.ClassInvalidArgs, []string{`no tool named "browse"`, "search"}},
		{"panic", "boom", `{}`, failure.ClassInternal, []string{"internal error"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := r.Call(context.Background(), c.tool, json.RawMessage(c.args))
			if obs.Meta.Class != c.class {
				t.Errorf("class = %q, want %q (text %q)", obs.Meta.Class, c.class, obs.Text)
			}
			for _, w := range c.wantText {
				if !strings.Contains(obs.Text, w) {
					t.Errorf("text %q lacks %q", obs.Text, w)
				}
			}
			if obs.Meta.Bytes != len(obs.Text) || obs.Meta.Tool != c.tool {
				t.Errorf("meta = %+v", obs.Meta)
			}
		})
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("search", "", "invalid_args")); got != 6 {
		t.Errorf("mgrpo_tool_calls_total{invalid_args} = %v, want 6", got)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("search", "static", "ok")); got != 1 {
		t.Errorf("mgrpo_tool_calls_total{ok} = %v, want 1", got)
	}
	specs := r.Specs()
	if len(specs) != 2 || specs[1].Name != "search" {
		t.Fatalf("Specs = %+v", specs)
	}
	b, _ := json.Marshal(specs[1].OpenAI())
	if !strings.Contains(string(b), `"type":"function"`) || !strings.Contains(string(b), `"maxItems":3`) {
		t.Errorf("OpenAI spec = %s", b)
	}
}

func TestRegistryRejectsBadSchemaAndDuplicates(t *testing.T) {
	st, _ := NewSearch(SearchConfig{Provider: staticProvider{}})
	if _, err := NewRegistry([]Tool{st, st}); err == nil {
		t.Error("duplicate names accepted")
	}
	bad := badSchemaTool{}
	if _, err := NewRegistry([]Tool{bad}); err == nil {
		t.Error("invalid schema accepted")
	}
}

type badSchemaTool struct{}

func (badSchemaTool) Spec() Spec {
	return Spec{Name: "bad", Parameters: json.RawMessage(`{"type": 12}`)}
}
func (badSchemaTool) Call(context.Context, json.RawMessage) Observation { return Observation{} }
