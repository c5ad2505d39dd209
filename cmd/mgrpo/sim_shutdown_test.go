package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSimStopsWithRequestsInFlight checks that mgrpo sim, sent SIGTERM while
// requests are generating (the first token takes an hour, and these clients
// never leave), stops once its 5 s grace period is over rather than waiting
// for them, and that the held requests' connections are closed.
func TestSimStopsWithRequestsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the sim's 5 s grace period")
	}
	pr, pw := io.Pipe()
	signals := make(chan os.Signal, 2)
	done := make(chan int, 1)
	go func() {
		code := runMain(context.Background(), []string{"mgrpo", "sim", "--llm", "127.0.0.1:0", "--web", "127.0.0.1:0", "--ttft", "1h"},
			pw, io.Discard, signals, func(int) {})
		pw.Close()
		done <- code
	}()
	var llmURL string
	sc := bufio.NewScanner(pr)
	for llmURL == "" && sc.Scan() {
		if name, url, _ := strings.Cut(sc.Text(), " "); name == "llm" {
			llmURL = url
		}
	}
	go io.Copy(io.Discard, pr)
	if llmURL == "" {
		t.Fatal("no llm line printed")
	}
	held := make(chan error, 3)
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"messages":[{"role":"user","content":"hi"}],"n":1024,"logprobs":true,"top_logprobs":20}`,
	} {
		go func() {
			resp, err := http.Post(llmURL+"/chat/completions", "application/json", strings.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			held <- err
		}()
	}
	waitRunning(t, strings.TrimSuffix(llmURL, "/v1")+"/metrics", `vllm:num_requests_running{model_name="sim-qwen3"} 3.0`)
	sent := time.Now()
	signals <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0", code)
		}
		if waited := time.Since(sent); waited > 15*time.Second {
			t.Errorf("sim took %v to stop after SIGTERM; its grace period is 5 s", waited)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sim has not stopped 30 s after SIGTERM with requests in flight")
	}
	for range 3 {
		select {
		case err := <-held:
			if err == nil {
				t.Error("a held request was answered in full; want its connection closed")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a held request's connection is still open after the sim stopped")
		}
	}
}

// waitRunning polls the metrics at url until they hold line.
func waitRunning(t *testing.T, url, line string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), line+"\n") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %s after 20 s", line, url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
