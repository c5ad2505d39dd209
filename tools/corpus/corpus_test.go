package corpus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/internal/httpserve/httpservetest"
)

func TestParseLine(t *testing.T) {
	cases := []struct {
		name, line string
		want       Doc
		bad        bool
	}{
		{"wiki18", `{"id": "12", "contents": "\"Paris\"\nParis is the capital."}`, Doc{ID: "12", Title: "Paris", Text: "Paris is the capital."}, false},
		{"numeric-id", `{"id": 7, "contents": "Rome\nRome text"}`, Doc{ID: "7", Title: "Rome", Text: "Rome text"}, false},
		{"title-text", `{"id": "a", "title": "T", "text": "body"}`, Doc{ID: "a", Title: "T", Text: "body"}, false},
		{"url-id", `{"url": "https://x.example/p", "title": "T", "text": "body"}`, Doc{ID: "https://x.example/p", URL: "https://x.example/p", Title: "T", Text: "body"}, false},
		{"id-and-url", `{"id": 7, "url": "https://x.example/q", "title": "T", "text": "body"}`, Doc{ID: "7", URL: "https://x.example/q", Title: "T", Text: "body"}, false},
		{"no-id", `{"title": "T", "text": "body"}`, Doc{}, true},
		{"no-text", `{"id": "x"}`, Doc{}, true},
		{"not-json", `{"id":`, Doc{}, true},
	}
	for _, c := range cases {
		got, err := ParseLine([]byte(c.line))
		if c.bad {
			if !errors.Is(err, ErrBadLine) {
				t.Errorf("%s: err = %v, want ErrBadLine", c.name, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func writeCorpus(tb testing.TB, n int, wiki18 bool) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "corpus.jsonl")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := GenerateJSONL(f, n, 1, wiki18); err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestBuildResumeAndServe(t *testing.T) {
	in := writeCorpus(t, 3000, true)
	// Append a bad line: skipped, counted.
	f, _ := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n")
	f.Close()
	out := filepath.Join(t.TempDir(), "ix")

	// Interrupt after the first committed batch.
	ctx, cancel := context.WithCancel(context.Background())
	st, err := Build(ctx, BuildConfig{In: in, Out: out, BatchSize: 500, Progress: func(Stats) { cancel() }})
	if !errors.Is(err, context.Canceled) || st.Docs != 500 || st.Done {
		t.Fatalf("interrupted build: %+v, %v", st, err)
	}
	var lines bytes.Buffer
	if err := RunIndexCommand(context.Background(), IndexCommand{In: in, Out: out, BatchSize: 500}, &lines); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if !strings.Contains(lines.String(), "resumed and completed, 3000 documents, 1 lines skipped") {
		t.Errorf("progress output: %q", lines.String())
	}
	st, err = Build(context.Background(), BuildConfig{In: in, Out: out})
	if err != nil || !st.Done || st.Docs != 3000 {
		t.Fatalf("rerun on a complete index: %+v, %v", st, err)
	}
	other := writeCorpus(t, 10, false)
	if _, err := Build(context.Background(), BuildConfig{In: other, Out: out}); !errors.Is(err, ErrIndexExists) {
		t.Fatalf("foreign input into existing index: %v", err)
	}

	ix, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if n, _ := ix.Count(); n != 3000 {
		t.Fatalf("Count = %d, want 3000", n)
	}
	// Title of doc 1234 is unique through its number.
	var want Doc
	fb, _ := os.ReadFile(in)
	for _, l := range bytes.Split(fb, []byte("\n")) {
		if d, err := ParseLine(l); err == nil && d.ID == "1234" {
			want = d
		}
	}
	hits, err := ix.Search(context.Background(), want.Title, 3)
	if err != nil || len(hits) == 0 || hits[0].ID != "1234" || hits[0].Text != want.Text {
		t.Fatalf("Search(%q) = %+v, %v", want.Title, hits, err)
	}

	srv := httptest.NewServer(Handler(ix, 3))
	defer srv.Close()
	body := `{"queries": [` + mustJSON(want.Title) + `, "zzzznotaword"], "topk": 2, "return_scores": true}`
	resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Result [][]struct {
			Document struct{ ID, Contents string } `json:"document"`
			Score    float64                       `json:"score"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("retrieve: %d %v", resp.StatusCode, err)
	}
	if len(got.Result) != 2 || len(got.Result[0]) != 2 || got.Result[0][0].Document.ID != "1234" ||
		got.Result[0][0].Document.Contents != want.Contents() || got.Result[0][0].Score <= 0 || len(got.Result[1]) != 0 {
		t.Fatalf("retrieve result = %+v", got)
	}
	for _, bad := range []string{`{"queries": []}`, `{"queries": ["a"], "topk": 0}`, `nope`} {
		r, _ := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(bad))
		r.Body.Close()
		if r.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422", bad, r.StatusCode)
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{`{"id":"1","contents":"\"T\"\nx"}`, `{"url":"u","title":"t","text":"x"}`, `{"id":1.5e3,"text":"x"}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d, err := ParseLine(line)
		if err == nil && (d.ID == "" || d.Title+d.Text == "") {
			t.Fatalf("accepted %q as %+v", line, d)
		}
	})
}

func TestServeLifecycle(t *testing.T) {
	in := writeCorpus(t, 200, false)
	out := filepath.Join(t.TempDir(), "ix")
	if err := RunIndexCommand(context.Background(), IndexCommand{In: in, Out: out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- Serve(ctx, ServeConfig{Index: out, Listen: "127.0.0.1:0", Ready: func(a string) { addr <- a }})
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-errc:
		t.Fatalf("Serve: %v", err)
	}
	resp, err := http.Get("http://" + a + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Status    string `json:"status"`
		Documents int    `json:"documents"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.Status != "ok" || h.Documents != 200 {
		t.Errorf("health = %+v", h)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

// TestServeClosesSlowClients checks that corpus serve closes slow-loris
// connections (headers or a query a byte at a time, an idle keep-alive).
func TestServeClosesSlowClients(t *testing.T) {
	in := writeCorpus(t, 20, false)
	out := filepath.Join(t.TempDir(), "ix")
	if err := RunIndexCommand(context.Background(), IndexCommand{In: in, Out: out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	limits := httpserve.Short()
	limits.ReadHeaderTimeout, limits.BodyTimeout, limits.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- Serve(ctx, ServeConfig{Index: out, Listen: "127.0.0.1:0", Limits: limits, Ready: func(a string) { addr <- a }})
	}()
	var a string
	select {
	case a = <-addr:
	case err := <-errc:
		t.Fatalf("Serve: %v", err)
	}
	httpservetest.CheckSlowClients(t, a, "/health", "/retrieve", 300*time.Millisecond)
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}
