package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	openai "github.com/sashabaranov/go-openai"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// simServer is a running simulated inference server.
type simServer struct {
	sim *simllm.Server
	ts  *httptest.Server
}

// mustSim starts a sim server for cfg (DefaultConfig with the dialect
// set when cfg is zero) and closes it at the end of the test.
func mustSim(tb testing.TB, cfg simllm.Config, wrap func(http.Handler) http.Handler) *simServer {
	tb.Helper()
	s, err := simllm.NewServer(cfg)
	if err != nil {
		tb.Fatalf("NewServer: %v", err)
	}
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	// The sim first, so stalled handlers return and ts.Close does not wait.
	tb.Cleanup(func() { s.Close(); ts.CloseClientConnections(); ts.Close() })
	return &simServer{sim: s, ts: ts}
}

func simConfig(dialect string, seed uint64) simllm.Config {
	cfg := simllm.DefaultConfig()
	cfg.Dialect = dialect
	cfg.Seed = seed
	return cfg
}

// fastRetry is a retry policy with test-sized waits.
func fastRetry() RetryPolicy {
	return RetryPolicy{MaxAttempts: 8, WaitMin: time.Millisecond, WaitMax: 20 * time.Millisecond, MaxRetryAfter: 20 * time.Millisecond, CallTimeout: 30 * time.Second}
}

// mustClient builds a client and closes it at the end of the test.
func mustClient(tb testing.TB, cfg Config) *Client {
	tb.Helper()
	if cfg.Model == "" {
		cfg.Model = simllm.DefaultModel
	}
	if r := cfg.Retry; r.MaxAttempts == 0 && r.WaitMin == 0 && r.WaitMax == 0 && r.MaxRetryAfter == 0 &&
		r.CallTimeout == 0 && r.AttemptTimeout == 0 && r.AttemptTimeoutFor == nil {
		cfg.Retry = fastRetry()
	}
	if cfg.Pool.ProbeInterval == 0 {
		cfg.Pool.ProbeInterval = 50 * time.Millisecond
	}
	c, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

func ptr[T any](v T) *T { return &v }

// executorTools are the tools that make the sim policy act as an executor.
func executorTools() []openai.Tool {
	return []openai.Tool{
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "search", Description: "Search the web.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"array","items":{"type":"string"}}},"required":["query"]}`),
		}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "visit", Description: "Visit web pages.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"array","items":{"type":"string"}},"goal":{"type":"string"}},"required":["url","goal"]}`),
		}},
	}
}

const webBase = "http://web.sim"

// worldOnce builds the synthetic web once per test binary.
var worldOnce = sync.OnceValues(func() (*web.World, error) { return web.Generate(web.Config{Seed: 7}) })

func mustWorld(tb testing.TB) *web.World {
	tb.Helper()
	w, err := worldOnce()
	if err != nil {
		tb.Fatalf("web.Generate: %v", err)
	}
	return w
}

// runTool executes one executor tool call against the synthetic web.
func runTool(w *web.World, call openai.ToolCall) string {
	switch call.Function.Name {
	case "search":
		var a struct {
			Query []string `json:"query"`
		}
		if err := json.Unmarshal([]byte(call.Function.Arguments), &a); err != nil {
			return "error: " + err.Error()
		}
		var out struct {
			Organic []web.Result `json:"organic"`
		}
		for _, q := range a.Query {
			out.Organic = append(out.Organic, w.Search(webBase, q, 5)...)
		}
		b, _ := json.Marshal(out)
		return string(b)
	case "visit":
		var a struct {
			URL []string `json:"url"`
		}
		if err := json.Unmarshal([]byte(call.Function.Arguments), &a); err != nil {
			return "error: " + err.Error()
		}
		var b strings.Builder
		for _, u := range a.URL {
			text, ok := w.PageText(strings.TrimPrefix(u, webBase))
			if !ok {
				fmt.Fprintf(&b, "%s: page not found\n", u)
				continue
			}
			fmt.Fprintf(&b, "%s:\n%s\n", u, text)
		}
		return b.String()
	}
	return "error: unknown tool " + call.Function.Name
}

// runTrajectory plays question q as an executor for at most maxTurns turns,
// replaying every assistant message verbatim.
func runTrajectory(ctx context.Context, c *Client, w *web.World, q, key string, maxTurns int, seed int64) ([]*Turn, error) {
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a research executor. Use the tools to find the answer."},
		{Role: openai.ChatMessageRoleUser, Content: q},
	}
	var turns []*Turn
	for i := range maxTurns {
		t, err := c.Chat(ctx, Request{Messages: msgs, Tools: executorTools(), TrajectoryKey: key,
			Sampling: &Sampling{Seed: ptr(seed + int64(i)), MaxTokens: 2048}})
		if err != nil {
			return turns, fmt.Errorf("turn %d: %w", i, err)
		}
		turns = append(turns, t)
		msgs = append(msgs, t.Message)
		if len(t.ToolCalls) == 0 {
			break
		}
		for _, call := range t.ToolCalls {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: runTool(w, call), ToolCallID: call.ID})
		}
	}
	return turns, nil
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func bufferLogger(b *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// stripFields rewrites JSON answers of path, deleting the named fields from
// the top level and from every choice: it turns a new server into an old
// one.
func stripFields(path string, top, choice []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			var m map[string]any
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return
			}
			for _, k := range top {
				delete(m, k)
			}
			if chs, ok := m["choices"].([]any); ok {
				for _, ch := range chs {
					if cm, ok := ch.(map[string]any); ok {
						for _, k := range choice {
							delete(cm, k)
						}
					}
				}
			}
			b, _ := json.Marshal(m)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(b)
		})
	}
}

// counterValue reads a counter.
func counterValue(tb testing.TB, c interface{ Write(*dto.Metric) error }) float64 {
	tb.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func toolMsg(content, id string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: content, ToolCallID: id}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// wideIDs returns ids as the []int the sim's tokenizer takes.
func wideIDs(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}
