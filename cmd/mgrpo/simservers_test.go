package main

import (
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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
	webSrv := httptest.NewServer(world.Handler())
	t.Cleanup(webSrv.Close)
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	llmSrv := httptest.NewServer(srv.Handler())
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
	return simServers{llmURL: llmSrv.URL, webURL: webSrv.URL, webHost: u.Host, tasks: tasks}
}
