package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStallStreamStopsMidway: with the stall_stream fault, a streamed chat
// answer sends its first StreamStallAfter events and then nothing, until
// the client leaves; the server then shuts down (the held handler let go).
func TestStallStreamStopsMidway(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			cfg := testConfig(dialect)
			cfg.Faults = Faults{RateStallStream: 1, StreamStallAfter: 2}
			_, ts := MustServer(t, cfg)
			body, _ := json.Marshal(map[string]any{"model": DefaultModel, "stream": true, "max_tokens": 50,
				"messages": []any{map[string]any{"role": "user", "content": "Which city is the capital of Bretoria?"}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			events := make(chan string)
			go func() {
				defer close(events)
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if line := sc.Text(); strings.HasPrefix(line, "data: ") {
						events <- line
					}
				}
			}()
			for i := range 2 {
				if ev, ok := <-events; !ok || strings.Contains(ev, "[DONE]") {
					t.Fatalf("event %d: %q, want one of the events before the stall", i, ev)
				}
			}
			// The stream is held: nothing more arrives while the client waits.
			select {
			case ev, ok := <-events:
				t.Fatalf("after the stall: %q (open %v), want nothing", ev, ok)
			case <-time.After(200 * time.Millisecond):
			}
			cancel()
			for range events {
			}
			done := make(chan struct{})
			go func() { ts.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not shut down: the stalled stream outlived its client")
			}
		})
	}
}
