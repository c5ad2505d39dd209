package search

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/tools/remote"
)

// testKey is a fake credential; the suite checks it never leaks.
const testKey = "sk-test-9f8e7d6c5b4a"

// scenario names what a fake provider answers.
type scenario string

const (
	scOK      scenario = "ok"
	scEmpty   scenario = "empty"
	scAuth    scenario = "auth"
	scLimited scenario = "ratelimit"
	scServer  scenario = "server"
	scGarbage scenario = "garbage"
)

// fixture is the hit list every fake renders in its own format.
var fixture = []Result{
	{Title: "Alpha Labs", Link: "https://alpha.example/labs", Snippet: "Alpha Labs was founded in 1999."},
	{Title: "Beta Works", Link: "https://beta.example/", Snippet: "Beta Works builds bridges."},
	{Title: "Gamma Notes", Link: "https://gamma.example/n", Snippet: "Notes on gamma rays."},
}

// recorder collects request-shape violations seen by a fake handler; tests
// read them after the call instead of failing from the handler goroutine.
type recorder struct {
	mu       sync.Mutex
	problems []string
	requests int
	last     map[string]string
}

func (r *recorder) problem(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, s)
}

func (r *recorder) note(kv map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.last = kv
}

// fakeProvider builds a handler for one scenario of one provider.
type fakeProvider struct {
	name      string
	authCode  int
	handler   func(sc scenario, rec *recorder) http.Handler
	needsKey  bool
	errorText string // a fragment of the documented auth error message
}

// runConformance runs the shared provider suite against fp.
func runConformance(t *testing.T, fp fakeProvider) {
	t.Helper()
	for _, sc := range []scenario{scOK, scEmpty, scAuth, scLimited, scServer, scGarbage} {
		t.Run(fp.name+"/"+string(sc), func(t *testing.T) {
			rec := &recorder{}
			srv := httptest.NewServer(fp.handler(sc, rec))
			defer srv.Close()
			p, err := New(Config{Name: fp.name, BaseURL: srv.URL, Getenv: func(string) string { return testKey }})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got, err := p.Search(context.Background(), "alpha labs founded", 2)
			rec.mu.Lock()
			problems := rec.problems
			rec.mu.Unlock()
			for _, pr := range problems {
				t.Errorf("request: %s", pr)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Fatalf("error leaks the API key: %v", err)
			}
			var se *httpretry.StatusError
			switch sc {
			case scOK:
				if err != nil {
					t.Fatalf("Search: %v", err)
				}
				if len(got) != 2 {
					t.Fatalf("got %d results, want 2 (n caps the list)", len(got))
				}
				for i := range got {
					if got[i] != fixture[i] && !(fp.name == "retriever" && got[i].Title == fixture[i].Title) {
						t.Errorf("result %d = %+v, want %+v", i, got[i], fixture[i])
					}
				}
			case scEmpty:
				if err != nil || len(got) != 0 {
					t.Fatalf("got %v, %v; want no results and no error", got, err)
				}
			case scAuth:
				if !errors.As(err, &se) || se.Code != fp.authCode {
					t.Fatalf("err = %v, want StatusError %d", err, fp.authCode)
				}
				if c := remote.Classify(err); c != failure.ClassAuth && c != failure.ClassClient {
					t.Errorf("class = %q, want auth", c)
				}
				if !strings.Contains(se.Message, fp.errorText) {
					t.Errorf("message %q lacks the provider's %q", se.Message, fp.errorText)
				}
			case scLimited:
				if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests {
					t.Fatalf("err = %v, want StatusError 429", err)
				}
				if se.RetryAfter != 7*time.Second {
					t.Errorf("RetryAfter = %v, want 7s", se.RetryAfter)
				}
				if c := remote.Classify(err); c != failure.ClassRateLimited {
					t.Errorf("class = %q, want rate_limited", c)
				}
			case scServer:
				if c := remote.Classify(err); c != failure.ClassServer {
					t.Errorf("err = %v, class %q, want http_5xx", err, c)
				}
			case scGarbage:
				if c := remote.Classify(err); c != failure.ClassDecode {
					t.Errorf("err = %v, class %q, want decode", err, c)
				}
			}
		})
	}
	if fp.needsKey {
		t.Run(fp.name+"/nokey", func(t *testing.T) {
			_, err := New(Config{Name: fp.name, BaseURL: "http://127.0.0.1:1", Getenv: func(string) string { return "" }})
			if !errors.Is(err, remote.ErrConfig) {
				t.Fatalf("New without key: %v, want ErrConfig", err)
			}
		})
	}
}

// common answers the non-OK scenarios the way most providers do; the
// provider's own bodies are passed in.
func common(w http.ResponseWriter, sc scenario, authCode int, authBody, limitBody string) bool {
	switch sc {
	case scAuth:
		writeRaw(w, authCode, "application/json", authBody)
	case scLimited:
		w.Header().Set("Retry-After", "7")
		writeRaw(w, http.StatusTooManyRequests, "application/json", limitBody)
	case scServer:
		writeRaw(w, http.StatusInternalServerError, "text/plain", "upstream exploded")
	case scGarbage:
		writeRaw(w, http.StatusOK, "application/json", `{"organic": [ {"title": `)
	default:
		return false
	}
	return true
}

func writeRaw(w http.ResponseWriter, code int, ctype, body string) {
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

func TestNewUnknownProvider(t *testing.T) {
	_, err := New(Config{Name: "altavista"})
	if err == nil || !strings.Contains(err.Error(), "unsupported search provider") {
		t.Fatalf("err = %v", err)
	}
}
