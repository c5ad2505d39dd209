package farm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// memShared is an in-memory stand-in for the run's store as the shared
// tool cache.
type memShared struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memShared) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

func (s *memShared) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = value
	return nil
}

// TestSummaryToolCacheCounts runs real search and visit calls on two
// workers' toolboxes sharing one cache, records them in rollouts as the
// agents do, and checks that the step summary's cache counts match the
// calls: misses are the requests the provider and the site received, hits
// the rest, shared hits those one worker got from the other's fetches.
func TestSummaryToolCacheCounts(t *testing.T) {
	var searches, pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			searches.Add(1)
			fmt.Fprint(w, `{"organic":[{"title":"T","link":"https://example.com/","snippet":"s","position":1}]}`)
			return
		}
		pages.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>P</title></head><body><article><p>%s</p></article></body></html>", strings.Repeat("Text of the page. ", 30))
	}))
	defer srv.Close()
	shared := &memShared{m: map[string][]byte{}}
	worker := func() *tools.Registry {
		reg, err := tools.NewWebToolbox(tools.WebConfig{
			Search:      search.Config{Name: "serper", BaseURL: srv.URL, Getenv: func(string) string { return "k" }},
			AllowHosts:  []string{srv.Listener.Addr().String()},
			SharedCache: shared,
		})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	a, b := worker(), worker()
	page := fmt.Sprintf(`{"url":[%q],"goal":"g"}`, srv.URL+"/p")
	script := []struct {
		reg        *tools.Registry
		tool, args string
	}{
		{a, "search", `{"query":["alpha","beta"]}`},  // two misses
		{a, "search", `{"query":["alpha"]}`},         // a local hit
		{b, "search", `{"query":["alpha","gamma"]}`}, // a shared hit and a miss
		{b, "search", `{"query":["gamma"]}`},         // a local hit
		{a, "visit", page},                           // a miss
		{b, "visit", page},                           // a shared hit
	}
	task := Task{ID: "q", Question: "Q?", Answer: "a"}
	var results []RolloutResult
	for i, s := range script {
		o := s.reg.Call(context.Background(), s.tool, json.RawMessage(s.args))
		if o.Meta.Failed() {
			t.Fatalf("call %d failed: %+v", i, o.Meta)
		}
		tree := scriptedRollout(task, rollout.RolloutTask{QueryID: "q", K: i}, 1, "a")
		tree.Executors[0].Steps[0].Calls = []agents.CallRecord{{Name: s.tool, Meta: o.Meta}}
		results = append(results, RolloutResult{Tree: tree})
	}
	var sum rollout.StepSummary
	summarize(&sum, results)

	wantSearch := rollout.CacheCounts{Requests: 6, Hits: 3, SharedHits: 1, Misses: int(searches.Load()), HitRate: 0.5}
	wantVisit := rollout.CacheCounts{Requests: 2, Hits: 1, SharedHits: 1, Misses: int(pages.Load()), HitRate: 0.5}
	wantTotal := rollout.CacheCounts{Requests: 8, Hits: 4, SharedHits: 2, Misses: wantSearch.Misses + wantVisit.Misses, HitRate: 0.5}
	if searches.Load() != 3 || pages.Load() != 1 {
		t.Fatalf("upstream saw %d searches and %d pages, want 3 and 1", searches.Load(), pages.Load())
	}
	for _, c := range []struct {
		name      string
		got, want rollout.CacheCounts
	}{
		{"search", sum.ToolCacheByTool["search"], wantSearch},
		{"visit", sum.ToolCacheByTool["visit"], wantVisit},
		{"total", sum.ToolCache, wantTotal},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if _, ok := sum.ToolCacheByTool[agents.ToolDelegate]; ok || len(sum.ToolCacheByTool) != 2 {
		t.Errorf("by tool: %v; want search and visit only (delegations have no sub-requests)", sum.ToolCacheByTool)
	}
	// With no call sharing another's flight, every miss is billed.
	if sum.Usage.SearchRequests != wantSearch.Misses || sum.Usage.VisitRequests != wantVisit.Misses {
		t.Errorf("usage %d searches, %d pages; want the misses", sum.Usage.SearchRequests, sum.Usage.VisitRequests)
	}
}
