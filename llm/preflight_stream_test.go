package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// stripStreamIDs rewrites the event streams of the chat route without
// prompt_token_ids and choices[].token_ids: vLLM before 0.10.2, which
// ignores return_token_ids. Unstreamed answers pass unchanged.
func stripStreamIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		body := rec.Body.Bytes()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			var out bytes.Buffer
			for _, line := range strings.Split(string(body), "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				var m map[string]any
				if ok && json.Unmarshal([]byte(data), &m) == nil {
					delete(m, "prompt_token_ids")
					for _, ch := range m["choices"].([]any) {
						delete(ch.(map[string]any), "token_ids")
					}
					b, _ := json.Marshal(m)
					line = "data: " + string(b)
				}
				out.WriteString(line + "\n")
			}
			body = out.Bytes()
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestPreflightStreamFallsBack: a server that streams no token ids is found
// by the preflight, logged, and called unstreamed from then on, with its
// turns still token-exact.
func TestPreflightStreamFallsBack(t *testing.T) {
	s := mustSim(t, simConfig(DialectVLLM, 2), stripStreamIDs)
	var logs syncBuffer
	c := mustClient(t, Config{Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Stream: true, Logger: bufferLogger(&logs)})
	if err := c.PreflightStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.Streaming() {
		t.Fatalf("the client still streams from a server without token ids in its stream")
	}
	if !strings.Contains(logs.String(), "streams no token ids") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
	tr, err := c.Chat(context.Background(), Request{Messages: userMsg(mustWorld(t).Questions[0].Question), Tools: executorTools()})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.HasTokens() {
		t.Errorf("the unstreamed turn has no tokens")
	}
}

// TestPreflightStreamKeepsStreaming: servers that stream token ids (both
// dialects of the sim) pass the preflight and stay streamed.
func TestPreflightStreamKeepsStreaming(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			s := mustSim(t, simConfig(dialect, 2), nil)
			c := mustClient(t, Config{Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Stream: true})
			if err := c.PreflightStream(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !c.Streaming() {
				t.Errorf("the client stopped streaming")
			}
		})
	}
}
