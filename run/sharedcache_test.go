package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/redis"
	"github.com/mgrpo/mgrpo/store/sqlite"
	"github.com/mgrpo/mgrpo/tools"
	"github.com/mgrpo/mgrpo/tools/search"
)

// fakeWeb is a Serper-shaped search API and a site, counting the requests
// each receives: what a metered provider would bill.
type fakeWeb struct {
	searches, pages atomic.Int64
}

func (f *fakeWeb) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		f.searches.Add(1)
		var q struct {
			Q string `json:"q"`
		}
		_ = json.NewDecoder(r.Body).Decode(&q)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"organic":[{"title":"About %s","link":"https://example.com/a","snippet":"s","position":1}]}`, q.Q)
		return
	}
	f.pages.Add(1)
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprintf(w, "<html><head><title>Page %s</title></head><body><article><h1>Heading</h1><p>%s</p></article></body></html>",
		r.URL.Path, strings.Repeat("The fact sought is on this page. ", 40))
}

// workerToolbox returns the web toolbox one worker process builds: its own
// in-memory cache, the run's store as the shared cache.
func workerToolbox(tb testing.TB, srv *httptest.Server, shared store.Cache) *tools.Registry {
	tb.Helper()
	reg, err := tools.NewWebToolbox(tools.WebConfig{
		Search:      search.Config{Name: "serper", BaseURL: srv.URL, Getenv: func(string) string { return "k-test" }},
		AllowHosts:  []string{srv.Listener.Addr().String()},
		SharedCache: shared,
		CacheScope:  cacheScope(Config{Sim: true, Seed: 7}),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

// testSharedToolCache runs the shared-cache scenario on a store that open
// opens anew for each "worker" (a new connection to the same file or
// server, as another process would): N identical concurrent calls in each
// of two workers, then a third worker after the first two closed their
// stores (another run on the same store), make one provider request and
// one page fetch in all.
func testSharedToolCache(t *testing.T, open func(testing.TB) store.Store) {
	web := &fakeWeb{}
	srv := httptest.NewServer(web)
	defer srv.Close()
	ctx := context.Background()
	searchArgs := json.RawMessage(`{"query":["Velmora Labs founder"]}`)
	visitArgs := json.RawMessage(fmt.Sprintf(`{"url":[%q],"goal":"the fact"}`, srv.URL+"/velmora"))

	type counts struct{ calls, hits, shared, upstream int }
	worker := func(name string) (search, visit counts) {
		s := open(t)
		defer s.Close()
		reg := workerToolbox(t, srv, s)
		const n = 8
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			for _, c := range []struct {
				tool string
				args json.RawMessage
				into *counts
			}{{"search", searchArgs, &search}, {"visit", visitArgs, &visit}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := reg.Call(ctx, c.tool, c.args)
					if o.Meta.Class != failure.ClassOK {
						t.Errorf("%s: %s call failed: %+v", name, c.tool, o.Meta)
					}
					mu.Lock()
					defer mu.Unlock()
					c.into.calls++
					c.into.hits += o.Meta.CacheHits
					c.into.shared += o.Meta.SharedHits
					c.into.upstream += o.Meta.Upstream
				}()
			}
		}
		wg.Wait()
		return search, visit
	}

	s1, v1 := worker("worker 1")
	if s1.upstream != 1 || v1.upstream != 1 || s1.shared != 0 || v1.shared != 0 {
		t.Errorf("worker 1: search %+v, visit %+v; want one upstream request each, no shared hit", s1, v1)
	}
	for i, name := range []string{"worker 2", "a later run"} {
		s, v := worker(name)
		// The store answers the first flight; calls that start after it
		// ended hit the worker's own cache.
		for tool, c := range map[string]counts{"search": s, "visit": v} {
			if c.upstream != 0 || c.hits != c.calls || c.shared < 1 {
				t.Errorf("%s (%d): %s %+v; want every call a hit, at least one from the store, none upstream", name, i+2, tool, c)
			}
		}
	}
	if got := web.searches.Load(); got != 1 {
		t.Errorf("the search provider received %d requests, want 1", got)
	}
	if got := web.pages.Load(); got != 1 {
		t.Errorf("the site received %d requests, want 1", got)
	}
}

// TestSharedToolCacheSQLite: two workers, then a later run, on one SQLite
// store file.
func TestSharedToolCacheSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	testSharedToolCache(t, func(tb testing.TB) store.Store {
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			tb.Fatal(err)
		}
		return s
	})
}

// TestSharedToolCacheRedis: the same on Redis, when MGRPO_TEST_REDIS names
// one (keys under a fresh prefix, removed afterwards).
func TestSharedToolCacheRedis(t *testing.T) {
	raw := os.Getenv("MGRPO_TEST_REDIS")
	if raw == "" {
		t.Skip("MGRPO_TEST_REDIS is not set: start a Redis (redis-server --port 6390 --save '' --appendonly no) and run " +
			"MGRPO_TEST_REDIS=redis://127.0.0.1:6390/0 go test ./run (.ci/run does both)")
	}
	var b [6]byte
	rand.Read(b[:])
	prefix := "mgrpotest:toolcache:" + hex.EncodeToString(b[:]) + ":"
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("MGRPO_TEST_REDIS: %v", err)
	}
	q := u.Query()
	q.Set("prefix", prefix)
	u.RawQuery = q.Encode()
	t.Cleanup(func() { deleteRedisKeys(t, raw, prefix) })
	testSharedToolCache(t, func(tb testing.TB) store.Store {
		s, err := redis.Open(context.Background(), u.String())
		if err != nil {
			tb.Fatal(err)
		}
		return s
	})
}

// deleteRedisKeys removes the keys under prefix.
func deleteRedisKeys(tb testing.TB, raw, prefix string) {
	opt, err := goredis.ParseURL(raw)
	if err != nil {
		tb.Errorf("cleanup: %v", err)
		return
	}
	c := goredis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	n := 0
	for iter.Next(ctx) {
		if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
			tb.Errorf("cleanup of %s: %v", iter.Val(), err)
			return
		}
		n++
	}
	if err := iter.Err(); err != nil {
		tb.Errorf("cleanup of %s*: %v", prefix, err)
	}
	if n == 0 {
		tb.Errorf("no key under %s: the tool cache wrote nothing to Redis", prefix)
	}
}

func TestCacheScope(t *testing.T) {
	if got := cacheScope(Config{}); got != "" {
		t.Errorf("scope of a real run = %q, want empty (runs share)", got)
	}
	a, b := cacheScope(Config{Sim: true, Seed: 1}), cacheScope(Config{Sim: true, Seed: 2})
	if a == "" || a == b {
		t.Errorf("sim scopes %q and %q: want distinct per seed", a, b)
	}
}
