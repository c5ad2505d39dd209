package httpserve_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/internal/httpserve/httpservetest"
)

// short are limits a test waits out quickly.
func short() httpserve.Limits {
	return httpserve.Limits{ReadHeaderTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, MaxBodyBytes: 1 << 10}
}

// mustServe serves h within l on a loopback port until the test ends and
// returns its address.
func mustServe(t *testing.T, l httpserve.Limits, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := l.Server(h)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// streamer reads its body, then streams ten events 100 ms apart: a second
// in all, three times the short limits' timeouts.
func streamer(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "too big", http.StatusRequestEntityTooLarge)
		}
		return
	}
	for i := range 10 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		fmt.Fprintf(w, "data: %d\n\n", i)
		http.NewResponseController(w).Flush()
	}
}

func TestSlowClientsAreClosed(t *testing.T) {
	addr := mustServe(t, short(), http.HandlerFunc(streamer))
	httpservetest.CheckSlowClients(t, addr, "/", "/", time.Second)
}

// TestStreamsOutliveTheTimeouts checks that a response streamed for longer
// than every timeout, after a body read in time, arrives whole: the body's
// deadline is lifted once it is read.
func TestStreamsOutliveTheTimeouts(t *testing.T) {
	addr := mustServe(t, short(), http.HandlerFunc(streamer))
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"a":1}`)
		}
		req, _ := http.NewRequest(method, "http://"+addr+"/", body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.HasSuffix(string(b), "data: 9\n\n") {
			t.Errorf("%s: got %q, %v; want ten events", method, b, err)
		}
	}
}

func TestBodyCap(t *testing.T) {
	addr := mustServe(t, short(), http.HandlerFunc(streamer))
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(strings.Repeat("x", 2<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over MaxBodyBytes: %s, want 413", resp.Status)
	}
}
