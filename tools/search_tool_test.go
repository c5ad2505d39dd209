package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/remote"
	"github.com/mgrpo/mgrpo/tools/search"
)

// countingSerper is a Serper-shaped fake that records when each request
// arrives and answers after delay.
type countingSerper struct {
	mu     sync.Mutex
	times  []time.Time
	n      atomic.Int64
	delay  time.Duration
	status int
}

func (c *countingSerper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.mu.Lock()
	c.times = append(c.times, time.Now())
	c.mu.Unlock()
	var q struct {
		Q string `json:"q"`
	}
	_ = json.NewDecoder(r.Body).Decode(&q)
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-r.Context().Done():
			return
		}
	}
	if c.status != 0 {
		w.WriteHeader(c.status)
		fmt.Fprint(w, `{"message":"down","statusCode":500}`)
		return
	}
	fmt.Fprintf(w, `{"searchParameters":{"q":%q},"organic":[{"title":"T %s","link":"https://x.example/%d","snippet":"s","position":1}]}`, q.Q, q.Q, len(q.Q))
}

func serperProvider(tb testing.TB, url string) search.Provider {
	tb.Helper()
	p, err := search.New(search.Config{Name: "serper", BaseURL: url, Getenv: func(string) string { return "k-123456" }})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestSearchSingleflight200Identical(t *testing.T) {
	fake := &countingSerper{delay: 50 * time.Millisecond}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	st, err := NewSearch(SearchConfig{Provider: serperProvider(t, srv.URL), Cache: cache.NewLRU(100, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	start := make(chan struct{})
	obs := make([]Observation, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			obs[i] = st.Call(context.Background(), json.RawMessage(`{"query":["Velmora Labs founder"]}`))
		}()
	}
	close(start)
	wg.Wait()
	if got := fake.n.Load(); got != 1 {
		t.Fatalf("provider saw %d requests for %d identical searches, want 1", got, n)
	}
	for i, o := range obs {
		if o.Meta.Class != failure.ClassOK || !strings.Contains(o.Text, "T Velmora Labs founder") {
			t.Fatalf("call %d: %+v", i, o)
		}
	}
	// A later identical call is a cache hit.
	o := st.Call(context.Background(), json.RawMessage(`{"query":["velmora  labs FOUNDER"]}`))
	if !o.Meta.CacheHit || fake.n.Load() != 1 {
		t.Errorf("normalized repeat: cache hit %v, provider requests %d", o.Meta.CacheHit, fake.n.Load())
	}
}

func TestSearchRateLimitNeverExceeded(t *testing.T) {
	fake := &countingSerper{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	const rps = 10
	st, err := NewSearch(SearchConfig{
		Provider:   serperProvider(t, srv.URL),
		Gate:       remote.NewGate(remote.GateConfig{Rate: rps, Concurrency: 4}),
		MaxQueries: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	// 5 concurrent calls × 5 distinct queries: 25 requests offered at once.
	start := time.Now()
	var wg sync.WaitGroup
	for c := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qs := make([]string, 5)
			for i := range qs {
				qs[i] = fmt.Sprintf("q%d-%d", c, i)
			}
			b, _ := json.Marshal(map[string]any{"query": qs})
			if o := st.Call(context.Background(), b); o.Meta.Class != failure.ClassOK {
				t.Errorf("call %d: %+v", c, o.Meta)
			}
		}()
	}
	wg.Wait()
	fake.mu.Lock()
	times := append([]time.Time(nil), fake.times...)
	fake.mu.Unlock()
	if len(times) != 25 {
		t.Fatalf("provider saw %d requests, want 25", len(times))
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	// The limiter (rate rps, burst 1) releases request k no earlier than
	// start + k/rps, and each request reaches the server after its release,
	// so the k-th arrival is no earlier either. A loaded machine only delays
	// arrivals, which this bound allows; it fails only when the limiter let
	// more through than its rate. (Arrival gaps between two requests would
	// shrink when the earlier one is delayed, so they are not compared.)
	const clockSlack = 10 * time.Millisecond
	for k, at := range times {
		if earliest := time.Duration(k) * time.Second / rps; at.Sub(start) < earliest-clockSlack {
			t.Fatalf("request %d arrived %v after the start, before the %v the rate of %d/s allows", k, at.Sub(start), earliest, rps)
		}
	}
}

func TestSearchFailuresAreObservations(t *testing.T) {
	fake := &countingSerper{status: http.StatusInternalServerError}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	st, _ := NewSearch(SearchConfig{Provider: serperProvider(t, srv.URL), Cache: cache.NewLRU(10, time.Hour)})
	o := st.Call(context.Background(), json.RawMessage(`{"query":["a","b"]}`))
	if o.Meta.Class != failure.ClassServer || o.Meta.Partial || !o.Meta.Failed() {
		t.Fatalf("meta = %+v", o.Meta)
	}
	if !strings.Contains(o.Text, `Search for "a" failed (http_5xx)`) || strings.Contains(o.Text, "k-123456") {
		t.Errorf("text = %q", o.Text)
	}
	// Failures are not cached.
	_ = st.Call(context.Background(), json.RawMessage(`{"query":["a"]}`))
	if got := fake.n.Load(); got != 3 {
		t.Errorf("provider saw %d requests, want 3 (errors not cached)", got)
	}
	// A cancelled caller gets a canceled observation, not a panic.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if o := st.Call(ctx, json.RawMessage(`{"query":["c"]}`)); o.Meta.Class != failure.ClassCanceled {
		t.Errorf("cancelled call: %+v", o.Meta)
	}
}

// TestSearchCacheHitsShareDecodedResults checks that a cache hit in the
// in-memory LRU returns the decoded results attached to the entry (no JSON
// decode), and that entries another process stored as bytes are decoded
// once and then served decoded.
func TestSearchCacheHitsShareDecodedResults(t *testing.T) {
	srv := httptest.NewServer(&countingSerper{})
	defer srv.Close()
	lru := cache.NewLRU(100, time.Hour)
	tool, err := NewSearch(SearchConfig{Provider: serperProvider(t, srv.URL), Cache: lru})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var upstream atomic.Int32
	first, hit, err := tool.searchOne(ctx, "alpha", &upstream)
	if err != nil || hit != missed || upstream.Load() != 1 {
		t.Fatalf("first search: hit=%v upstream=%d err=%v; want a miss that asked the provider once", hit, upstream.Load(), err)
	}
	second, hit, err := tool.searchOne(ctx, "alpha", &upstream)
	if err != nil || hit != localHit || upstream.Load() != 1 {
		t.Fatalf("second search: hit=%v upstream=%d err=%v; want a hit that asked nothing", hit, upstream.Load(), err)
	}
	if len(first) != 1 || &first[0] != &second[0] {
		t.Fatalf("hit did not share the decoded results: %v vs %v", first, second)
	}

	// Bytes stored by someone else (another process sharing a store).
	key := cache.Key("search", "serper", cache.Normalize("beta"), "10")
	_ = lru.Set(ctx, key, []byte(`[{"title":"B","link":"https://b.example/","snippet":"s"}]`), 0)
	a, hit, err := tool.searchOne(ctx, "beta", &upstream)
	if err != nil || hit != localHit || len(a) != 1 || a[0].Title != "B" {
		t.Fatalf("byte entry: %v hit=%v err=%v", a, hit, err)
	}
	b, _, _ := tool.searchOne(ctx, "beta", &upstream)
	if &a[0] != &b[0] {
		t.Fatal("a decoded byte entry was not kept for the next hit")
	}
}
