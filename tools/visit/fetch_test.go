package visit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/tools/remote"
	"github.com/mgrpo/mgrpo/tools/ssrf"
)

func mustFetcher(tb testing.TB, cfg Config, allow ...string) *Fetcher {
	tb.Helper()
	g, err := ssrf.New(ssrf.Config{Allow: allow})
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Guard = g
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	f, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func host(srv *httptest.Server) string { return srv.Listener.Addr().String() }

func TestFetchSimWebExtractsMainContent(t *testing.T) {
	w, err := web.Generate(web.Config{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	f := mustFetcher(t, Config{}, host(srv))
	q := w.Questions[0]
	page, err := f.Fetch(context.Background(), srv.URL+q.EvidencePaths[0])
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if page.ContentType != "text/html" || page.Title == "" {
		t.Errorf("page = %+v", page)
	}
	fact := "The " + q.Chain.Relations[0] + " of " + q.Chain.Entity + " is"
	if !strings.Contains(page.Text, fact) {
		t.Errorf("extracted text lacks the evidence %q:\n%s", fact, page.Text)
	}
	for _, boiler := range []string{"We use cookies", "Advertisement"} {
		if strings.Contains(page.Text, boiler) {
			t.Errorf("extracted text keeps boilerplate %q", boiler)
		}
	}
}

func TestFetchContentTypes(t *testing.T) {
	var flaky atomic.Int32
	var limited atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "just text")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1,"b":[true]}`)
	})
	mux.HandleFunc("/pdf", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, "%PDF-1.7\n...")
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		fmt.Fprint(w, "\x89PNG\r\n\x1a\n")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 5000))
	})
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, _ *http.Request) {
		if flaky.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "recovered")
	})
	mux.HandleFunc("/limited", func(w http.ResponseWriter, _ *http.Request) {
		if limited.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "after the wait")
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "gone", http.StatusNotFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/plain", http.StatusMovedPermanently)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := mustFetcher(t, Config{MaxBytes: 1000, MaxRedirects: 3, Retries: 2}, host(srv))
	cases := []struct {
		path  string
		class failure.Class
		text  string
	}{
		{"/plain", failure.ClassOK, "just text"},
		{"/json", failure.ClassOK, "\"a\": 1"},
		{"/pdf", failure.ClassUnsupported, ""},
		{"/png", failure.ClassUnsupported, ""},
		{"/big", failure.ClassOK, strings.Repeat("x", 1000)},
		{"/flaky", failure.ClassOK, "recovered"},
		{"/limited", failure.ClassOK, "after the wait"},
		{"/gone", failure.ClassClient, ""},
		{"/loop", failure.ClassRefused, ""},
		{"/hop", failure.ClassOK, "just text"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			start := time.Now()
			p, err := f.Fetch(context.Background(), srv.URL+c.path)
			if got := remote.Classify(err); got != c.class {
				t.Fatalf("class = %q (%v), want %q", got, err, c.class)
			}
			if c.text != "" && !strings.Contains(p.Text, c.text) {
				t.Errorf("text = %q, want %q", p.Text, c.text)
			}
			switch c.path {
			case "/big":
				if !p.Truncated || len(p.Text) != 1000 {
					t.Errorf("byte cap: truncated=%v len=%d", p.Truncated, len(p.Text))
				}
			case "/limited":
				if time.Since(start) < time.Second {
					t.Errorf("429 retried after %v, before Retry-After 1s", time.Since(start))
				}
			case "/hop":
				if p.FinalURL != srv.URL+"/plain" {
					t.Errorf("FinalURL = %s", p.FinalURL)
				}
			case "/pdf":
				if !strings.Contains(err.Error(), "unsupported content type application/pdf") {
					t.Errorf("pdf error = %v", err)
				}
			}
		})
	}
}

func TestFetchRefusesUnlistedAndRedirectToLoopback(t *testing.T) {
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret") }))
	defer internal.Close()
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/", http.StatusFound)
	}))
	defer public.Close()
	f := mustFetcher(t, Config{}, host(public))
	for _, u := range []string{internal.URL + "/", public.URL + "/", "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd", "http://0x7f.1/"} {
		_, err := f.Fetch(context.Background(), u)
		if !errors.Is(err, ssrf.ErrRefused) {
			t.Errorf("Fetch(%s) = %v, want ErrRefused", u, err)
		}
	}
}

func TestJinaBackend(t *testing.T) {
	const key = "jina_test_key_0042"
	var gotPath, gotAuth string
	jina := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		if r.URL.Path == "/https://fail.example/" {
			w.WriteHeader(http.StatusPaymentRequired)
			fmt.Fprintf(w, `{"code":402,"message":"Insufficient balance for key %s"}`, key)
			return
		}
		fmt.Fprint(w, "Title: Example Domain\n\nURL Source: https://example.com/\n\nMarkdown Content:\nThis domain is for use in examples.")
	}))
	defer jina.Close()
	g, _ := ssrf.New(ssrf.Config{Resolver: publicResolver{}})
	f, err := New(Config{Guard: g, Backend: BackendJina, JinaURL: jina.URL, Getenv: func(string) string { return key }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Fetch(context.Background(), "https://example.com/")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if gotPath != "/https://example.com/" || gotAuth != "Bearer "+key {
		t.Errorf("jina request path %q auth %q", gotPath, gotAuth)
	}
	if p.Title != "Example Domain" || !strings.Contains(p.Text, "for use in examples") {
		t.Errorf("page = %+v", p)
	}
	_, err = f.Fetch(context.Background(), "https://fail.example/")
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("error leaks or is missing: %v", err)
	}
	// The target URL is still vetted.
	if _, err := f.Fetch(context.Background(), "http://127.0.0.1/"); !errors.Is(err, ssrf.ErrRefused) {
		t.Errorf("jina backend fetched a loopback target: %v", err)
	}
}

// publicResolver resolves every name to a public documentation-free
// address, so tests need no DNS.
type publicResolver struct{}

func (publicResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

func FuzzExtractHTML(f *testing.F) {
	for _, s := range []string{
		"<html><head><title>T</title></head><body><article><p>Hello <a href='/x'>link</a></p></article></body></html>",
		"<div><nav>menu</nav><p>text</p>",
		"<<<>>>", "", "<script>alert(1)</script>", "<table><tr><td>1</td></tr></table>",
	} {
		f.Add([]byte(s))
	}
	u, _ := url.Parse("https://example.org/page")
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, _ = ExtractHTML(body, u)
	})
}
