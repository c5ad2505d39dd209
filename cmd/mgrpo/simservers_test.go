package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// simServers are a sim inference server and a sim web on httptest
// servers, as a user's own servers would be, with a task file of the web's
// questions.
type simServers struct {
	llmURL, webURL string
	webHost        string // host:port of the web, for --allow-host
	tasks          string // task file path
	// searches and pages count the web's search requests and page
	// fetches; judgeCalls the chat requests that offered no tools (the
	// judges' calls); agentCalls the chat requests that offered tools (the
	// agents' turns).
	searches, pages, judgeCalls, agentCalls *atomic.Int64
	// engine is the inference server, for its generation log
	// (Config.RecordGenerations).
	engine *simllm.Server
}

// counting wraps h, adding to n each request that count selects.
func counting(h http.Handler, n *atomic.Int64, count func(r *http.Request, body []byte) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if count(r, body) {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

// startSimServers serves a sim web (seed 4) and an inference server with cfg
// until the test ends, and writes the first n questions to a task file in
// dir. Question URLs point at the served web.
func startSimServers(t *testing.T, dir string, cfg simllm.Config, n int) simServers {
	t.Helper()
	world, err := web.Generate(web.Config{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	var searches, pages, judgeCalls, agentCalls atomic.Int64
	// The preflight's probes (one search, a one-token call per role) are
	// not the run's work: they are left out of the counts.
	webHandler := counting(world.Handler(), &searches, func(r *http.Request, _ []byte) bool {
		return r.URL.Path == "/search" && !strings.Contains(r.URL.RawQuery, "preflight")
	})
	webHandler = counting(webHandler, &pages, func(r *http.Request, _ []byte) bool { return strings.HasPrefix(r.URL.Path, "/site/") })
	webSrv := httptest.NewServer(webHandler)
	t.Cleanup(webSrv.Close)
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	llmHandler := counting(srv.Handler(), &judgeCalls, func(r *http.Request, body []byte) bool {
		return strings.HasSuffix(r.URL.Path, "/chat/completions") && !bytes.Contains(body, []byte(`"tools"`)) &&
			!bytes.Contains(body, []byte(`"Say OK."`))
	})
	llmSrv := httptest.NewServer(counting(llmHandler, &agentCalls, func(r *http.Request, body []byte) bool {
		return strings.HasSuffix(r.URL.Path, "/chat/completions") && bytes.Contains(body, []byte(`"tools"`))
	}))
	t.Cleanup(func() { srv.Close(); llmSrv.CloseClientConnections(); llmSrv.Close() })
	var b strings.Builder
	if err := web.WriteTasks(&b, world.Questions[:n], "jsonl"); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(strings.ReplaceAll(b.String(), "http://web.sim", webSrv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(webSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return simServers{llmURL: llmSrv.URL, webURL: webSrv.URL, webHost: u.Host, tasks: tasks,
		searches: &searches, pages: &pages, judgeCalls: &judgeCalls, agentCalls: &agentCalls, engine: srv}
}
