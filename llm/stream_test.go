package llm

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// comparableTurn returns t without what differs between two calls of the
// same request to servers of the same seed: the latency, and the endpoint
// (each client has its own server).
func comparableTurn(t *Turn) Turn {
	c := *t
	c.Latency, c.Endpoint, c.tokens = 0, "", nil
	return c
}

// TestStreamedTurnsEqualUnstreamed plays the same seeded trajectories
// (tool calls, reasoning, several turns) with a streaming and an
// unstreamed client against sims of one seed and asserts that every Turn, and the
// sequences and drifts assembled from them, are identical. SGLang streams
// on its native /generate route (its chat route refuses token ids in a
// stream), so its unstreamed reference is the native route's too; the
// strip-reasoning server breaks the prompt prefix, so drifts are split.
func TestStreamedTurnsEqualUnstreamed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dialect string
		strip   bool
	}{
		{"vllm", DialectVLLM, false},
		{"vllm/drift", DialectVLLM, true},
		{"sglang", DialectSGLang, false},
		{"sglang/drift", DialectSGLang, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := simConfig(tc.dialect, 5)
			cfg.StripReasoning = tc.strip
			// Two servers of one seed, one per client: a server numbers its
			// requests, and tool-call ids derive from that number.
			ps, ss := mustSim(t, cfg, nil), mustSim(t, cfg, nil)
			plain := mustClient(t, Config{Dialect: tc.dialect, Endpoints: []string{ps.ts.URL}, CaptureTokens: true})
			streamed := mustClient(t, Config{Dialect: tc.dialect, Endpoints: []string{ss.ts.URL}, CaptureTokens: true, Stream: true})
			if tc.dialect == DialectSGLang {
				plain.dialect.(*sglangDialect).mode.Store(sglangNative)
			}
			w := mustWorld(t)
			var calls, reasoning, drifts int
			for i := range 4 {
				q := w.Questions[i].Question
				want, err := runTrajectory(context.Background(), plain, w, q, "", 4, int64(40+i))
				if err != nil {
					t.Fatal(err)
				}
				got, err := runTrajectory(context.Background(), streamed, w, q, "", 4, int64(40+i))
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("question %d: %d streamed turns, %d unstreamed", i, len(got), len(want))
				}
				for k := range want {
					if d := cmp.Diff(comparableTurn(want[k]), comparableTurn(got[k]), cmpopts.IgnoreUnexported(Turn{})); d != "" {
						t.Fatalf("question %d turn %d: streamed turn differs (-unstreamed +streamed):\n%s", i, k, d)
					}
					calls += len(want[k].ToolCalls)
					if want[k].Message.ReasoningContent != "" {
						reasoning++
					}
				}
				ws, wd, err := Sequences(want)
				if err != nil {
					t.Fatal(err)
				}
				gs, gd, err := Sequences(got)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(ws, gs) || !reflect.DeepEqual(wd, gd) {
					t.Errorf("question %d: sequences or drifts differ", i)
				}
				drifts += len(wd)
			}
			if calls == 0 || reasoning == 0 {
				t.Errorf("%d tool calls, %d turns with reasoning: the trajectories do not exercise the stream's fields", calls, reasoning)
			}
			if tc.strip && drifts == 0 {
				t.Errorf("no drift against a strip-reasoning server")
			}
			if !streamed.stream.Load() {
				t.Errorf("the streaming client fell back to unstreamed")
			}
		})
	}
}
