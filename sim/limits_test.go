package sim

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/internal/httpserve/httpservetest"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/trainer"
	"github.com/mgrpo/mgrpo/sim/web"
)

// shortLimits are Streaming's limits with timeouts a test waits out
// quickly.
func shortLimits() httpserve.Limits {
	l := httpserve.Streaming()
	l.ReadHeaderTimeout, l.BodyTimeout, l.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	return l
}

// TestSlowClientsAreClosed serves the inference server, the web and the
// trainer as mgrpo sim does, with short timeouts, and checks that each
// closes slow-loris connections (headers or a body a byte at a time, an
// idle keep-alive), and that a generation streamed for longer than every
// timeout still arrives whole.
func TestSlowClientsAreClosed(t *testing.T) {
	cfg := simllm.DefaultConfig()
	cfg.PerToken = 50 * time.Millisecond
	llm, err := simllm.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	world, err := web.Generate(web.Config{Seed: 1, Sites: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr := trainer.New(trainer.Config{Policy: trainer.Toy{Vocab: 4}, BaseModels: []string{"base"}})
	defer tr.Close()
	limits := shortLimits()
	s, err := Listen([]Service{
		{Name: "llm", Addr: "127.0.0.1:0", Handler: llm.Handler(), Limits: limits},
		{Name: "web", Addr: "127.0.0.1:0", Handler: world.Handler(), Limits: limits},
		{Name: "trainer", Addr: "127.0.0.1:0", Handler: tr.Handler(), Limits: limits},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(0)
	routes := [][2]string{{"/health", "/v1/chat/completions"}, {"/", "/search"}, {"/api/v1/healthz", "/api/v1/forward_backward"}}
	for i, u := range s.URLs {
		httpservetest.CheckSlowClients(t, strings.TrimPrefix(u, "http://"), routes[i][0], routes[i][1], 300*time.Millisecond)
	}

	body := `{"messages":[{"role":"user","content":"Say hello at some length."}],"max_tokens":30,"stream":true}`
	resp, err := http.Post(s.URLs[0]+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
		t.Errorf("a stream cut by the limits? %v after %v, ends %q", err, time.Since(start), b[max(0, len(b)-80):])
	}
	t.Logf("the stream took %v", time.Since(start))
}
