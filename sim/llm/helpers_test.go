package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// fixedClock is the Clock of every test server.
func fixedClock() time.Time { return time.Unix(1767225600, 0) }

// MustServer starts an httptest server for cfg (Clock fixed) and closes both
// when the test ends.
func MustServer(tb testing.TB, cfg Config) (*Server, *httptest.Server) {
	tb.Helper()
	if cfg.Clock == nil {
		cfg.Clock = fixedClock
	}
	s, err := NewServer(cfg)
	if err != nil {
		tb.Fatalf("NewServer: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(func() {
		s.Close()
		ts.Close()
	})
	return s, ts
}

// vllmConfig is the default test configuration of a dialect.
func testConfig(dialect string) Config {
	return Config{Dialect: dialect, Seed: 7, ToolCallParser: true, ReasoningParser: true}
}

// post sends body as JSON and returns the status, headers and body.
func post(tb testing.TB, url string, body any) (int, http.Header, []byte) {
	tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			tb.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(js)
	}
	resp, err := http.Post(url, "application/json", rd)
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, out
}

// get sends a GET.
func get(tb testing.TB, url string) (int, []byte) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// researchTools are the executor's tools as a client offers them.
var researchTools = []map[string]any{
	{"type": "function", "function": map[string]any{"name": policy.ToolSearch, "description": "Search the web.", "parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}}}},
	{"type": "function", "function": map[string]any{"name": policy.ToolVisit, "description": "Visit a page.", "parameters": map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}, "required": []string{"url"}}}},
}

// question is a synthetic research question.
const question = "What is the birth city of the founder of Velmora Labs?"

// plannerTools offers the delegate tool, which makes the policy a planner.
var plannerTools = []map[string]any{
	{"type": "function", "function": map[string]any{"name": policy.ToolDelegate, "description": "Delegate a subtask.", "parameters": map[string]any{"type": "object", "properties": map[string]any{"task": map[string]any{"type": "string"}}}}},
}
