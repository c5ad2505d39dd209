package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	openai "github.com/sashabaranov/go-openai"
)

// TestCloseClosesIdleConnections checks that Close hangs up the idle
// keep-alive connections of the HTTP client New made, so a closed client
// leaves no sockets behind.
func TestCloseClosesIdleConnections(t *testing.T) {
	var open atomic.Int64
	sim, err := simllm.NewServer(simConfig(DialectVLLM, 1))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(sim.Handler())
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	ts.Start()
	t.Cleanup(func() { sim.Close(); ts.Close() })
	c, err := New(Config{Role: "executor", Dialect: DialectVLLM, Model: simllm.DefaultModel, Endpoints: []string{ts.URL}, CaptureTokens: true, Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []openai.ChatCompletionMessage{{Role: "user", Content: "Who founded Velmo Ledger?"}}
	if _, err := c.Chat(context.Background(), Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if open.Load() == 0 {
		t.Fatal("no connection open after a call; the test cannot see Close's effect")
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := open.Load(); n != 0 {
		t.Errorf("%d connections still open after Close", n)
	}
}
