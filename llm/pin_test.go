package llm

import (
	"context"
	"net/http"
	"sync"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestWeightVersionPin pins a role's calls under a context and checks, in
// both dialects, streamed and not, that its client sends the pin, that the
// sim serves the pinned version after an update and the turn records it,
// and that a client of another role and an unpinned context send none.
func TestWeightVersionPin(t *testing.T) {
	for _, tc := range []struct {
		dialect string
		stream  bool
	}{
		{DialectVLLM, false}, {DialectVLLM, true}, {DialectSGLang, false}, {DialectSGLang, true},
	} {
		name := tc.dialect
		if tc.stream {
			name += "/stream"
		}
		t.Run(name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				sent []string
			)
			srv := mustSim(t, simConfig(tc.dialect, 3), func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					sent = append(sent, r.URL.Path+" "+r.Header.Get(WeightVersionPinHeader))
					mu.Unlock()
					h.ServeHTTP(w, r)
				})
			})
			srv.sim.SetWeightVersion("1")
			srv.sim.SetWeightVersion("2")
			planner := mustClient(t, Config{Role: "planner", Dialect: tc.dialect, Endpoints: []string{srv.ts.URL}, CaptureTokens: true, Stream: tc.stream})
			executor := mustClient(t, Config{Role: "executor", Dialect: tc.dialect, Endpoints: []string{srv.ts.URL}, CaptureTokens: true, Stream: tc.stream})
			ctx := WithWeightVersionPin(context.Background(), "planner", 1)
			for _, c := range []struct {
				name   string
				client *Client
				ctx    context.Context
				want   string
			}{
				{"pinned", planner, ctx, "1"},
				{"pinned to the initial weights", planner, WithWeightVersionPin(ctx, "planner", 0), simllm.DefaultWeightVersion},
				{"another role's pin", executor, ctx, "2"},
				{"no pin", planner, context.Background(), "2"},
			} {
				mu.Lock()
				sent = nil
				mu.Unlock()
				turn, err := c.client.Chat(c.ctx, Request{Messages: userMsg("hello")})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if turn.WeightVersion != c.want {
					t.Errorf("%s: served by version %q, want %q", c.name, turn.WeightVersion, c.want)
				}
				mu.Lock()
				for _, s := range sent {
					if pinned := s[len(s)-1] != ' '; pinned != (c.client == planner && c.ctx != context.Background()) {
						t.Errorf("%s: request %q", c.name, s)
					}
				}
				mu.Unlock()
			}
		})
	}
}
