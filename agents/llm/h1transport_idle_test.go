package llm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestH1TransportIdleTimeout(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(echoHandler))
	tr := mustH1Transport(t, 4)
	if tr.idleTimeout != defaultH1IdleTimeout {
		t.Errorf("idle timeout %v, want %v", tr.idleTimeout, defaultH1IdleTimeout)
	}
	mustDo(t, tr, http.MethodGet, ts.URL, nil)
	mustDo(t, tr, http.MethodGet, ts.URL, nil)
	if got := cc.opened.Load(); got != 1 {
		t.Fatalf("server saw %d connections, want 1", got)
	}
	// Age the idle connection past the timeout instead of sleeping.
	tr.mu.Lock()
	for _, h := range tr.hosts {
		for _, pc := range h.idle {
			pc.idleAt = pc.idleAt.Add(-tr.idleTimeout - time.Millisecond)
		}
	}
	tr.mu.Unlock()
	mustDo(t, tr, http.MethodGet, ts.URL, nil)
	if got := cc.opened.Load(); got != 2 {
		t.Errorf("server saw %d connections, want 2", got)
	}
	cc.waitClosed(t, 1)
	if got := tr.idleConns(); got != 1 {
		t.Errorf("idle connections = %d, want 1", got)
	}
}

// parallelConns makes n requests at once, held by the server until all
// have arrived, so they use n connections.
func parallelConns(t *testing.T, tr http.RoundTripper, n int) (*httptest.Server, *connCounter) {
	t.Helper()
	var arrived sync.WaitGroup
	arrived.Add(n)
	ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/barrier" {
			arrived.Done()
			arrived.Wait()
		}
		echoHandler(w, r)
	}))
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, ts.URL+"/barrier", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := cc.opened.Load(); got != int64(n) {
		t.Fatalf("server saw %d connections, want %d", got, n)
	}
	return ts, cc
}

func TestH1TransportMaxIdlePerHost(t *testing.T) {
	tr := mustH1Transport(t, 2)
	ts, cc := parallelConns(t, tr, 5)
	if got := tr.idleConns(); got != 2 {
		t.Errorf("idle connections = %d, want 2", got)
	}
	cc.waitClosed(t, 3)
	mustDo(t, tr, http.MethodGet, ts.URL, nil)
	mustDo(t, tr, http.MethodGet, ts.URL, nil)
	if got := cc.opened.Load(); got != 5 {
		t.Errorf("server saw %d connections, want 5 (idle ones reused)", got)
	}
}

func TestH1TransportMaxIdle(t *testing.T) {
	tr := mustH1Transport(t, 10)
	tr.maxIdle = 3
	_, cc := parallelConns(t, tr, 5)
	if got := tr.idleConns(); got != 3 {
		t.Errorf("idle connections = %d, want 3", got)
	}
	cc.waitClosed(t, 2)
}

// stubRoundTripper records requests sent to the fallback.
type stubRoundTripper struct {
	mu        sync.Mutex
	urls      []string
	closeIdle int
}

func (s *stubRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.urls = append(s.urls, req.URL.String())
	return &http.Response{StatusCode: 299, Body: http.NoBody, Request: req}, nil
}

func (s *stubRoundTripper) CloseIdleConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeIdle++
}

func TestH1TransportCloseIdleConnections(t *testing.T) {
	tr := mustH1Transport(t, 4)
	stub := &stubRoundTripper{}
	tr.fallback = stub
	_, cc := parallelConns(t, tr, 3)
	if got := tr.idleConns(); got != 3 {
		t.Fatalf("idle connections = %d, want 3", got)
	}
	tr.CloseIdleConnections()
	if got := tr.idleConns(); got != 0 {
		t.Errorf("idle connections = %d, want 0", got)
	}
	cc.waitClosed(t, 3)
	tr.CloseIdleConnections()
	if stub.closeIdle != 2 {
		t.Errorf("fallback CloseIdleConnections called %d times, want 2", stub.closeIdle)
	}
}

func TestH1TransportFallback(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(echoHandler))
	tests := []struct {
		name     string
		url      string
		header   http.Header
		method   string
		proxied  bool
		fallback bool
	}{
		{"http", ts.URL + "/a", nil, http.MethodGet, false, false},
		{"https", "https://example.invalid/a", nil, http.MethodGet, false, true},
		{"other scheme", "ftp://example.invalid/a", nil, http.MethodGet, false, true},
		{"upgrade", ts.URL + "/ws", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}, http.MethodGet, false, true},
		{"connect", ts.URL, nil, http.MethodConnect, false, true},
		{"proxy configured", ts.URL + "/a", nil, http.MethodGet, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustH1Transport(t, 4)
			stub := &stubRoundTripper{}
			tr.fallback, tr.proxied = stub, tc.proxied
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[k] = v
			}
			before := cc.opened.Load()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == 299; got != tc.fallback {
				t.Errorf("went to fallback: %v, want %v", got, tc.fallback)
			}
			if tc.fallback && (len(stub.urls) != 1 || stub.urls[0] != req.URL.String()) {
				t.Errorf("fallback got %q, want [%q]", stub.urls, req.URL.String())
			}
			if got := cc.opened.Load() - before; (got == 1) == tc.fallback {
				t.Errorf("server saw %d new connections", got)
			}
		})
	}
}

func TestH1TransportTLSFallback(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(echoHandler))
	defer ts.Close()
	tr := mustH1Transport(t, 4)
	tr.fallback = ts.Client().Transport
	resp, body := mustDo(t, tr, http.MethodPost, ts.URL+"/tls", []byte("secret"))
	if resp.TLS == nil || body != "POST /tls 6 secret" {
		t.Errorf("got TLS %v, body %q", resp.TLS != nil, body)
	}
}

func TestProxiesHTTP(t *testing.T) {
	proxyURL := &url.URL{Scheme: "http", Host: "proxy:3128"}
	tests := []struct {
		name  string
		proxy func(*http.Request) (*url.URL, error)
		want  bool
	}{
		{"none", nil, false},
		{"no proxy for http", func(*http.Request) (*url.URL, error) { return nil, nil }, false},
		{"proxy", http.ProxyURL(proxyURL), true},
		{"error", func(*http.Request) (*url.URL, error) { return nil, errors.New("bad proxy") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := proxiesHTTP(tc.proxy); got != tc.want {
				t.Errorf("proxiesHTTP = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestH1TransportConcurrent(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(b)
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(64+n))
		}
		fmt.Fprintf(w, "%x", sum)
		io.WriteString(w, strings.Repeat("z", n))
	}))
	const goroutines, perGoroutine = 64, 50
	tr := mustH1Transport(t, goroutines)
	// On a loaded machine a goroutine may leave its connection idle for
	// longer than the idle timeout; that would add a connection.
	tr.idleTimeout = -1
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				body := bytes.Repeat([]byte{byte('a' + g%26)}, 100+g*37+i*11)
				n := (g*perGoroutine + i) * 13 % 30000
				u := fmt.Sprintf("%s/c?n=%d", ts.URL, n)
				if i%3 == 0 {
					u += "&chunked=1"
				}
				resp, err := client.Post(u, "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				sum := sha256.Sum256(body)
				if want := fmt.Sprintf("%x", sum) + strings.Repeat("z", n); err != nil || string(got) != want {
					errs <- fmt.Errorf("goroutine %d request %d: body of %d bytes (%v), want %d", g, i, len(got), err, len(want))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := cc.opened.Load(); got > goroutines {
		t.Errorf("server saw %d connections, want at most %d", got, goroutines)
	}
}

// TestDefaultHTTPClientTransport checks that clients built without an
// HTTPClient use the h1 transport with the pool's limits.
func TestDefaultHTTPClientTransport(t *testing.T) {
	hc := defaultHTTPClient(PoolConfig{MaxInFlightPerEndpoint: 8}.withDefaults(3))
	tr, ok := hc.Transport.(*h1Transport)
	if !ok {
		t.Fatalf("transport %T, want *h1Transport", hc.Transport)
	}
	if tr.maxIdlePerHost != 8 || tr.maxIdle != 24 || tr.idleTimeout != defaultH1IdleTimeout {
		t.Errorf("limits per host %d, total %d, idle %v; want 8, 24, %v", tr.maxIdlePerHost, tr.maxIdle, tr.idleTimeout, defaultH1IdleTimeout)
	}
	fb, ok := tr.fallback.(*http.Transport)
	if !ok {
		t.Fatalf("fallback %T, want *http.Transport", tr.fallback)
	}
	if fb.MaxIdleConnsPerHost != 8 || fb.ReadBufferSize != h1ReadBufferSize || fb.WriteBufferSize != h1WriteBufferSize {
		t.Errorf("fallback per host %d, buffers %d/%d", fb.MaxIdleConnsPerHost, fb.ReadBufferSize, fb.WriteBufferSize)
	}
}

// TestH1TransportIdleHoldsNoBuffer checks that connections lend their read
// buffer back when idle, and that an answer the server sent before the
// client waited for it (and a slow one) is read: waitReadable must not
// miss data that is already there.
func TestH1TransportIdleHoldsNoBuffer(t *testing.T) {
	ts, _ := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(50 * time.Millisecond)
		}
		echoHandler(w, r)
	}))
	tr := mustH1Transport(t, 4)
	for i, path := range []string{"/fast", "/slow", "/fast", "/fast", "/slow"} {
		if _, got := mustDo(t, tr, http.MethodGet, ts.URL+path, nil); !strings.HasPrefix(got, "GET "+path) {
			t.Fatalf("request %d: got %.40q", i, got)
		}
		tr.mu.Lock()
		for _, h := range tr.hosts {
			for _, pc := range h.idle {
				if pc.br != nil {
					t.Errorf("request %d: an idle connection holds a read buffer", i)
				}
			}
		}
		tr.mu.Unlock()
	}
}
