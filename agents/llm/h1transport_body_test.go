package llm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestH1TransportEarlyClose(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("b", 1<<20))
	}))
	tr := mustH1Transport(t, 4)
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := resp.Body.Read(buf); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("Read after Close: %v, want http.ErrBodyReadAfterClose", err)
	}
	cc.waitClosed(t, 1)
	if got := tr.idleConns(); got != 0 {
		t.Errorf("idle connections = %d, want 0", got)
	}
	_, body := mustDo(t, tr, http.MethodGet, ts.URL, nil)
	if len(body) != 1<<20 {
		t.Errorf("body length %d, want %d", len(body), 1<<20)
	}
	if got := cc.opened.Load(); got != 2 {
		t.Errorf("server saw %d connections, want 2", got)
	}
}

// TestH1TransportEOFReleases checks that a body read to EOF gives the
// connection back even before Close.
func TestH1TransportEOFReleases(t *testing.T) {
	ts, _ := mustH1Server(t, http.HandlerFunc(echoHandler))
	tr := mustH1Transport(t, 4)
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	if got := tr.idleConns(); got != 1 {
		t.Errorf("idle connections after EOF = %d, want 1", got)
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("Read after EOF: %v, want io.EOF", err)
	}
	resp.Body.Close()
	if got := tr.idleConns(); got != 1 {
		t.Errorf("idle connections after Close = %d, want 1", got)
	}
}

func TestH1TransportChunked(t *testing.T) {
	ts, cc := mustH1Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		for i := range 5 {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush()
		}
		w.Header().Set("X-Sum", "5")
	}))
	tr := mustH1Transport(t, 4)
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := "part0;part1;part2;part3;part4;"; string(b) != want {
			t.Errorf("request %d: body %q, want %q", i, b, want)
		}
		if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
			t.Errorf("request %d: TransferEncoding %v, want chunked", i, resp.TransferEncoding)
		}
		if got := resp.Trailer.Get("X-Sum"); got != "5" {
			t.Errorf("request %d: trailer X-Sum %q, want 5", i, got)
		}
	}
	if got := cc.opened.Load(); got != 1 {
		t.Errorf("server saw %d connections, want 1", got)
	}
}

func TestH1TransportCloseDelimited(t *testing.T) {
	base := rawServer(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
	})
	tr := mustH1Transport(t, 4)
	for i := range 2 {
		resp, body := mustDo(t, tr, http.MethodGet, base+"/", nil)
		if body != "until the end" || !resp.Close {
			t.Errorf("request %d: body %q, Close %v; want %q, true", i, body, resp.Close, "until the end")
		}
	}
	if got := tr.idleConns(); got != 0 {
		t.Errorf("idle connections = %d, want 0", got)
	}
}
