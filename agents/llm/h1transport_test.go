package llm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connCounter counts a test server's connections through ConnState.
type connCounter struct {
	opened, closed atomic.Int64
}

func (c *connCounter) state(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

// waitClosed polls until the server has seen n connections closed.
func (c *connCounter) waitClosed(tb testing.TB, n int64) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.closed.Load() < n {
		if time.Now().After(deadline) {
			tb.Fatalf("server saw %d connections closed, want %d", c.closed.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// mustH1Server starts a loopback server counting its connections.
func mustH1Server(tb testing.TB, h http.Handler) (*httptest.Server, *connCounter) {
	tb.Helper()
	cc := &connCounter{}
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = cc.state
	ts.Start()
	tb.Cleanup(ts.Close)
	return ts, cc
}

// mustH1Transport returns a transport with per-host limit perHost whose
// idle connections are closed at the end of the test.
func mustH1Transport(tb testing.TB, perHost int) *h1Transport {
	tb.Helper()
	tr := newH1Transport(0, perHost, 0)
	tr.proxied = false // the tests talk to loopback servers directly
	tb.Cleanup(tr.CloseIdleConnections)
	return tr
}

// idleConns returns how many idle connections tr holds.
func (t *h1Transport) idleConns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.hosts {
		n += len(h.idle)
	}
	if n != t.nIdle {
		panic(fmt.Sprintf("idle count %d, stacks hold %d", t.nIdle, n))
	}
	return n
}

// mustDo performs a request and returns its status and body.
func mustDo(tb testing.TB, rt http.RoundTripper, method, target string, body []byte) (*http.Response, string) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, target, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, target, err)
	}
	return resp, string(b)
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "%s %s %d %s", r.Method, r.URL.Path, len(b), b)
}

func TestH1TransportKeepAlive(t *testing.T) {
	var mu sync.Mutex
	var headers []http.Header
	var lengths []int64
	ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers, lengths = append(headers, r.Header.Clone()), append(lengths, r.ContentLength)
		mu.Unlock()
		echoHandler(w, r)
	}))
	tr := mustH1Transport(t, 4)
	for i := range 5 {
		body := strings.Repeat("x", i*1000)
		resp, got := mustDo(t, tr, http.MethodPost, ts.URL+"/v1/chat", []byte(body))
		if want := fmt.Sprintf("POST /v1/chat %d %s", len(body), body); got != want || resp.StatusCode != 200 {
			t.Fatalf("request %d: got %d %.40q, want 200 %.40q", i, resp.StatusCode, got, want)
		}
		if resp.Request == nil || resp.Request.URL.Path != "/v1/chat" {
			t.Fatalf("request %d: resp.Request = %v", i, resp.Request)
		}
	}
	if got := cc.opened.Load(); got != 1 {
		t.Errorf("server saw %d connections, want 1", got)
	}
	if got := tr.idleConns(); got != 1 {
		t.Errorf("idle connections = %d, want 1", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, h := range headers {
		if ae := h.Get("Accept-Encoding"); ae != "" {
			t.Errorf("request %d: Accept-Encoding %q, want none", i, ae)
		}
		if lengths[i] != int64(i*1000) {
			t.Errorf("request %d: Content-Length %d, want %d", i, lengths[i], i*1000)
		}
	}
}

func TestH1TransportNoBodyAnswers(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/empty":
			w.Header().Set("Content-Length", "0")
		default:
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		}
	}))
	tr := mustH1Transport(t, 4)
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"head", http.MethodHead, "/x", 200, ""},
		{"no content", http.MethodGet, "/204", 204, ""},
		{"empty", http.MethodGet, "/empty", 200, ""},
		{"get", http.MethodGet, "/x", 200, "hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := mustDo(t, tr, tc.method, ts.URL+tc.path, nil)
			if resp.StatusCode != tc.status || body != tc.body {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	if got := cc.opened.Load(); got != 1 {
		t.Errorf("server saw %d connections, want 1", got)
	}
}

func TestH1TransportConnectionClose(t *testing.T) {
	tests := []struct {
		name   string
		server bool // the server answers Connection: close
		req    func(*http.Request)
	}{
		{"server", true, func(*http.Request) {}},
		{"request Close", false, func(r *http.Request) { r.Close = true }},
		{"request header", false, func(r *http.Request) { r.Header.Set("Connection", "keep-alive, close") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.server {
					w.Header().Set("Connection", "close")
				}
				echoHandler(w, r)
			}))
			tr := mustH1Transport(t, 4)
			for i := range 3 {
				req, _ := http.NewRequest(http.MethodGet, ts.URL+"/c", nil)
				tc.req(req)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != "GET /c 0 " {
					t.Fatalf("request %d: body %q, %v", i, b, err)
				}
			}
			if got := cc.opened.Load(); got != 3 {
				t.Errorf("server saw %d connections, want 3", got)
			}
			if got := tr.idleConns(); got != 0 {
				t.Errorf("idle connections = %d, want 0", got)
			}
			cc.waitClosed(t, 3)
		})
	}
}

// rawServer serves each connection with serve on a loopback listener.
func rawServer(tb testing.TB, serve func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

func TestH1TransportStaleConnection(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		body    func() io.Reader
		noGet   bool // drop GetBody
		wantErr bool
	}{
		{"post replayed", http.MethodPost, func() io.Reader { return strings.NewReader("payload") }, false, false},
		{"get replayed", http.MethodGet, func() io.Reader { return nil }, false, false},
		{"body not replayable", http.MethodPost, func() io.Reader { return strings.NewReader("payload") }, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, cc := mustH1Server(t, http.HandlerFunc(echoHandler))
			tr := mustH1Transport(t, 4)
			mustDo(t, tr, http.MethodGet, ts.URL+"/warm", nil)
			if tr.idleConns() != 1 {
				t.Fatalf("idle connections = %d, want 1", tr.idleConns())
			}
			// The server drops the idle connection, as uvicorn does after
			// its keep-alive timeout.
			ts.CloseClientConnections()
			cc.waitClosed(t, 1)
			req, _ := http.NewRequest(tc.method, ts.URL+"/again", tc.body())
			if tc.noGet {
				req.GetBody = nil
			}
			resp, err := tr.RoundTrip(req)
			if tc.wantErr {
				if err == nil {
					resp.Body.Close()
					t.Fatal("RoundTrip succeeded, want an error")
				}
				if !isStaleConnErr(err) {
					t.Errorf("err = %v, want a closed-connection error", err)
				}
				if got := cc.opened.Load(); got != 1 {
					t.Errorf("server saw %d connections, want 1 (no retry)", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := tc.method + " /again 0 "
			if tc.method == http.MethodPost {
				want = "POST /again 7 payload"
			}
			if string(b) != want {
				t.Errorf("body %q, want %q", b, want)
			}
			if got := cc.opened.Load(); got != 2 {
				t.Errorf("server saw %d connections, want 2", got)
			}
		})
	}
}

// TestH1TransportFreshConnectionNotRetried checks that a new connection the
// server closes without answering is an error, not retried.
func TestH1TransportFreshConnectionNotRetried(t *testing.T) {
	var conns atomic.Int64
	base := rawServer(t, func(c net.Conn) {
		conns.Add(1)
		http.ReadRequest(bufio.NewReader(c))
	})
	tr := mustH1Transport(t, 4)
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatal("RoundTrip succeeded, want an error")
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("server saw %d connections, want 1", got)
	}
}

func TestH1TransportCancel(t *testing.T) {
	tests := []struct {
		name string
		// midBody: the server sends the header and part of the body, then
		// stalls; otherwise it stalls before the header.
		midBody bool
	}{
		{"before header", false},
		{"mid body", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/stall" {
					// Reading the body to EOF makes the server watch the
					// connection, so r.Context ends when the client closes it.
					io.ReadAll(r.Body)
					if tc.midBody {
						w.Header().Set("Content-Length", "100000")
						io.WriteString(w, strings.Repeat("a", 1000))
						w.(http.Flusher).Flush()
					}
					select {
					case <-release:
					case <-r.Context().Done():
					}
					return
				}
				echoHandler(w, r)
			}))
			t.Cleanup(func() { close(release) }) // runs before ts.Close
			tr := mustH1Transport(t, 4)
			mustDo(t, tr, http.MethodGet, ts.URL+"/warm", nil)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/stall", strings.NewReader("x"))
			var start time.Time
			var err error
			if tc.midBody {
				resp, rerr := tr.RoundTrip(req)
				if rerr != nil {
					t.Fatalf("RoundTrip: %v", rerr)
				}
				time.AfterFunc(20*time.Millisecond, cancel)
				start = time.Now()
				_, err = io.ReadAll(resp.Body)
				if cerr := resp.Body.Close(); cerr != nil {
					t.Errorf("Close: %v", cerr)
				}
			} else {
				time.AfterFunc(20*time.Millisecond, cancel)
				start = time.Now()
				var resp *http.Response
				resp, err = tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("returned after %v", d)
			}
			if got := tr.idleConns(); got != 0 {
				t.Errorf("idle connections = %d, want 0", got)
			}
			cc.waitClosed(t, 1)
			mustDo(t, tr, http.MethodGet, ts.URL+"/after", nil)
			if got := cc.opened.Load(); got != 2 {
				t.Errorf("server saw %d connections, want 2", got)
			}
		})
	}
}

func TestH1TransportCancelledBeforeStart(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(echoHandler))
	tr := mustH1Transport(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if got := cc.opened.Load(); got != 0 {
		t.Errorf("server saw %d connections, want 0", got)
	}
}

func TestH1TransportInformational(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Reading the body sends 100 Continue (the request expects it).
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "got %s", b)
		}))
		tr := mustH1Transport(t, 4)
		for i := range 2 {
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader("body"))
			req.Header.Set("Expect", "100-continue")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || string(b) != "got body" {
				t.Errorf("request %d: got %d %q, want 201 %q", i, resp.StatusCode, b, "got body")
			}
		}
		if got := cc.opened.Load(); got != 1 {
			t.Errorf("server saw %d connections, want 1", got)
		}
	})
	t.Run("raw", func(t *testing.T) {
		base := rawServer(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"+
					"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		tr := mustH1Transport(t, 4)
		for i := range 2 {
			resp, body := mustDo(t, tr, http.MethodPost, base+"/", []byte("x"))
			if resp.StatusCode != 200 || body != "ok" {
				t.Errorf("request %d: got %d %q, want 200 ok", i, resp.StatusCode, body)
			}
		}
		if got := tr.idleConns(); got != 1 {
			t.Errorf("idle connections = %d, want 1", got)
		}
	})
}

func TestH1TransportHeaderLimit(t *testing.T) {
	base := rawServer(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Junk: " + strings.Repeat("j", 1000) + "\r\n"
		for range h1MaxHeaderBytes/len(line) + 100 {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	tr := mustH1Transport(t, 4)
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, errH1HeaderTooLarge) {
		t.Errorf("err = %v, want errH1HeaderTooLarge", err)
	}
}
