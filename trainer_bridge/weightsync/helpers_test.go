package weightsync

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// simEndpoint is a simulated inference server on loopback that records
// the routes it was asked for.
type simEndpoint struct {
	sim *simllm.Server
	ts  *httptest.Server

	mu     sync.Mutex
	routes []string
}

// URL returns the endpoint's base URL.
func (e *simEndpoint) URL() string { return e.ts.URL }

// Routes returns "METHOD /path" of every request so far, in order.
func (e *simEndpoint) Routes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.routes...)
}

// MustSim starts a sim server of dialect; cfg edits its configuration and
// wrap (nil: none) stands in front of its handler, to script failures.
func MustSim(tb testing.TB, dialect string, cfg func(*simllm.Config), wrap func(http.Handler) http.Handler) *simEndpoint {
	tb.Helper()
	c := simllm.DefaultConfig()
	c.Dialect = dialect
	if cfg != nil {
		cfg(&c)
	}
	s, err := simllm.NewServer(c)
	if err != nil {
		tb.Fatalf("NewServer: %v", err)
	}
	e := &simEndpoint{sim: s}
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.routes = append(e.routes, r.Method+" "+r.URL.Path)
		e.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() { s.Close(); e.ts.Close() })
	return e
}

// onRoute answers path with fn and passes every other request on.
func onRoute(path string, fn http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path {
				fn(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// fastOptions are Options that give up quickly, for tests.
func fastOptions() Options {
	return Options{
		RetryFor:  2 * time.Second,
		Backoff:   func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 5 * time.Millisecond },
		VerifyFor: 200 * time.Millisecond,
	}
}

// MustNew is New failing the test on error.
func MustNew(tb testing.TB, kind string, eps []*simEndpoint, o Options) Syncer {
	tb.Helper()
	urls := make([]string, len(eps))
	for i, e := range eps {
		urls[i] = e.URL()
	}
	s, err := New(kind, urls, o)
	if err != nil {
		tb.Fatalf("New(%s): %v", kind, err)
	}
	return s
}

// mustContain fails unless s holds every want.
func mustContain(tb testing.TB, s string, want ...string) {
	tb.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			tb.Errorf("error lacks %q:\n%s", w, s)
		}
	}
}
