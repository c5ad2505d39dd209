package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/search"
)

// countingStore is an in-memory stand-in for the run's store as a shared
// cache: it counts reads and writes and fails while down is set.
type countingStore struct {
	mu           sync.Mutex
	m            map[string][]byte
	reads, write atomic.Int64
	down         atomic.Bool
}

func (s *countingStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.reads.Add(1)
	if s.down.Load() {
		return nil, false, errors.New("store down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

func (s *countingStore) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	s.write.Add(1)
	if s.down.Load() {
		return errors.New("store down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = value
	return nil
}

// tieredSearch returns a search tool on url whose cache is a fresh LRU in
// front of shared: one worker process.
func tieredSearch(tb testing.TB, url string, shared cache.Cache) *SearchTool {
	tb.Helper()
	c := cache.NewTiered(cache.TieredConfig{Local: cache.NewLRU(100, time.Hour), Shared: shared})
	st, err := NewSearch(SearchConfig{Provider: serperProvider(tb, url), Cache: c})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// TestSearchTieredSingleflight checks that N identical concurrent calls in
// one process cost one provider request, one read of the shared store and
// one write, and that a second process then gets the result from the store.
func TestSearchTieredSingleflight(t *testing.T) {
	fake := &countingSerper{delay: 50 * time.Millisecond}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	shared := &countingStore{}
	w1 := tieredSearch(t, srv.URL, shared)

	const n = 100
	var wg sync.WaitGroup
	start := make(chan struct{})
	obs := make([]Observation, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			obs[i] = w1.Call(context.Background(), json.RawMessage(`{"query":["Velmora Labs founder"]}`))
		}()
	}
	close(start)
	wg.Wait()
	if got := fake.n.Load(); got != 1 {
		t.Errorf("provider requests = %d for %d identical calls, want 1", got, n)
	}
	if got := shared.reads.Load(); got != 1 {
		t.Errorf("store reads = %d, want 1", got)
	}
	if got := shared.write.Load(); got != 1 {
		t.Errorf("store writes = %d, want 1", got)
	}
	upstream := 0
	for i, o := range obs {
		if o.Meta.Class != failure.ClassOK || o.Meta.SharedHits != 0 {
			t.Fatalf("call %d: %+v", i, o.Meta)
		}
		upstream += o.Meta.Upstream
	}
	if upstream != 1 {
		t.Errorf("calls' Meta.Upstream sum to %d, want 1", upstream)
	}

	// A second worker: the store answers, once; then its own cache does.
	w2 := tieredSearch(t, srv.URL, shared)
	o := w2.Call(context.Background(), json.RawMessage(`{"query":["velmora labs founder"]}`))
	if !o.Meta.CacheHit || o.Meta.CacheHits != 1 || o.Meta.SharedHits != 1 || o.Meta.Upstream != 0 {
		t.Errorf("second worker's first call: %+v; want one shared hit", o.Meta)
	}
	o = w2.Call(context.Background(), json.RawMessage(`{"query":["velmora labs founder"]}`))
	if o.Meta.CacheHits != 1 || o.Meta.SharedHits != 0 {
		t.Errorf("second worker's repeat: %+v; want a local hit", o.Meta)
	}
	if got := fake.n.Load(); got != 1 {
		t.Errorf("provider requests = %d after the second worker, want 1", got)
	}
}

// TestSearchTieredStoreDown checks that a failing store never fails a
// call: the provider answers and the calls succeed.
func TestSearchTieredStoreDown(t *testing.T) {
	fake := &countingSerper{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	shared := &countingStore{}
	shared.down.Store(true)
	w := tieredSearch(t, srv.URL, shared)
	for i := range 2 {
		o := w.Call(context.Background(), json.RawMessage(`{"query":["alpha"]}`))
		if o.Meta.Class != failure.ClassOK {
			t.Fatalf("call %d with the store down: %+v", i, o.Meta)
		}
	}
	if got := fake.n.Load(); got != 1 {
		t.Errorf("provider requests = %d, want 1 (the second call is a local hit)", got)
	}
}

// TestWebToolboxSharedCacheMetrics checks the toolbox's wiring of the
// shared cache: shared hits reach Meta and mgrpo_tool_cache_shared_hits_total,
// and a store that fails is counted by operation in
// mgrpo_tool_cache_shared_errors_total while the calls succeed.
func TestWebToolboxSharedCacheMetrics(t *testing.T) {
	fake := &countingSerper{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m := NewMetrics(nil)
	shared := &countingStore{}
	toolbox := func() *Registry {
		reg, err := NewWebToolbox(WebConfig{
			Search:      search.Config{Name: "serper", BaseURL: srv.URL, Getenv: func(string) string { return "k-123456" }},
			SharedCache: shared, Metrics: m,
		})
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	args := json.RawMessage(`{"query":["alpha"]}`)
	if o := toolbox().Call(context.Background(), "search", args); o.Meta.CacheHits != 0 {
		t.Fatalf("first worker: %+v", o.Meta)
	}
	if o := toolbox().Call(context.Background(), "search", args); o.Meta.SharedHits != 1 {
		t.Fatalf("second worker: %+v; want a shared hit", o.Meta)
	}
	if got := testutil.ToFloat64(m.shareHits.WithLabelValues("search", "serper")); got != 1 {
		t.Errorf("shared hits counter = %v, want 1", got)
	}
	shared.down.Store(true)
	if o := toolbox().Call(context.Background(), "search", json.RawMessage(`{"query":["beta"]}`)); o.Meta.Class != failure.ClassOK {
		t.Fatalf("call with the store down: %+v", o.Meta)
	}
	for _, op := range []string{"get", "set"} {
		if got := testutil.ToFloat64(m.shareErrs.WithLabelValues(op)); got != 1 {
			t.Errorf("shared %s errors = %v, want 1", op, got)
		}
	}
	if got := fake.n.Load(); got != 2 {
		t.Errorf("provider requests = %d, want 2 (alpha once, beta once)", got)
	}
}
