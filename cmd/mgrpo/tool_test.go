package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/sim/web"
)

func TestToolCommands(t *testing.T) {
	world, err := web.Generate(web.Config{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(world.Handler())
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	page := srv.URL + world.Questions[0].EvidencePaths[0]
	t.Setenv("SERPER_API_KEY", "secret-test-key")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"searxng", []string{"tool", "search", "--provider", "searxng", "--search-url", srv.URL, "--query", world.Questions[0].Chain.Entity}, 0, "1. [", ""},
		{"serper", []string{"tool", "search", "--provider", "serper", "--search-url", srv.URL, "--query", "a", "--query", "b"}, 0, `"b"`, ""},
		{"unknown provider", []string{"tool", "search", "--provider", "altavista", "--query", "x"}, 2, "", ""},
		{"visit allowed", []string{"tool", "visit", "--url", page, "--allow-host", u.Host}, 0, "The ", ""},
		{"visit refused by the SSRF guard", []string{"tool", "visit", "--url", page}, 1, "", "add --allow-host " + u.Host},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantOut) {
				t.Errorf("stdout does not contain %q:\n%s", tt.wantOut, stdout)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.wantErr, stderr)
			}
			if strings.Contains(stdout+stderr, "secret-test-key") {
				t.Errorf("the API key appears in the output")
			}
		})
	}
}

func TestCorpusIndexAndServe(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	var b bytes.Buffer
	for i, doc := range []string{"Velmora Labs\nVelmora Labs makes telescopes.", "Orvane\nOrvane is a river city.", "Ida Kestrel\nIda Kestrel founded Velmora Labs."} {
		line, _ := json.Marshal(map[string]any{"id": i, "contents": doc})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "index")
	if code, _, stderr := runCLI(t, "corpus", "index", "--in", in, "--out", index); code != 0 {
		t.Fatalf("corpus index: exit %d: %s", code, stderr)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, []string{"mgrpo", "corpus", "serve", "--index", index, "--listen", "127.0.0.1:0"}, pw, io.Discard, nil, nil)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("corpus serve printed nothing")
	}
	go io.Copy(io.Discard, pr)
	_, retrieveURL, _ := strings.Cut(sc.Text(), " ")
	resp, err := http.Post(retrieveURL, "application/json", strings.NewReader(`{"queries": ["telescopes"], "topk": 2, "return_scores": true}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Result [][]struct {
			Document struct {
				ID       string `json:"id"`
				Contents string `json:"contents"`
			} `json:"document"`
			Score float64 `json:"score"`
		} `json:"result"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || len(got.Result) != 1 || len(got.Result[0]) == 0 || !strings.Contains(got.Result[0][0].Document.Contents, "telescopes") {
		t.Errorf("retrieve: %+v, %v", got, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("corpus serve exit %d after cancel", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("corpus serve did not stop")
	}
}
