package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	openai "github.com/sashabaranov/go-openai"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// runTokenTrajectory is runTrajectory continued in tokens.
func runTokenTrajectory(ctx context.Context, c *Client, w *web.World, q, key string, maxTurns int, seed int64) ([]*Turn, *TokenState, error) {
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a research executor. Use the tools to find the answer."},
		{Role: openai.ChatMessageRoleUser, Content: q},
	}
	var st TokenState
	var turns []*Turn
	for i := range maxTurns {
		t, err := c.Chat(ctx, Request{Messages: msgs, Tools: executorTools(), TrajectoryKey: key, Tokens: &st,
			Sampling: &Sampling{Seed: ptr(seed + int64(i)), MaxTokens: 2048}})
		if err != nil {
			return turns, &st, fmt.Errorf("turn %d: %w", i, err)
		}
		turns = append(turns, t)
		// Echo the message back as agent frameworks do: reasoning dropped,
		// "\n\n" content kept. The token path must not care.
		m := t.Message
		m.ReasoningContent = ""
		msgs = append(msgs, m)
		if len(t.ToolCalls) == 0 {
			break
		}
		for _, call := range t.ToolCalls {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: runTool(w, call), ToolCallID: call.ID})
		}
	}
	return turns, &st, nil
}

// templateBehaviours are the sim's chat-template behaviours of real models
// that break a re-rendered prefix.
var templateBehaviours = []struct {
	name string
	set  func(*simllm.Config)
}{
	{"append-only", func(*simllm.Config) {}},
	{"strip reasoning", func(c *simllm.Config) { c.StripReasoning = true }},
	{"qwen3: reasoning before the last query, merged tool results, canonical args, trimmed content", func(c *simllm.Config) {
		c.StripReasoningBeforeLastQuery, c.MergeToolResults, c.CanonicalToolArgs, c.TrimContent = true, true, true, true
	}},
}

// TestTokenPathHoldsTheInvariant: with every template behaviour and both
// dialects, each turn's prompt is the previous prompt and completion as
// sampled plus what the conversation added, so a trajectory is one
// sequence with no drift, and its tokens and logprobs are the engine's.
func TestTokenPathHoldsTheInvariant(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		for _, b := range templateBehaviours {
			for _, stream := range []bool{false, true} {
				name := dialect + "/" + b.name
				if stream {
					name += "/streamed"
				}
				t.Run(name, func(t *testing.T) {
					cfg := simConfig(dialect, 3)
					b.set(&cfg)
					s := mustSim(t, cfg, nil)
					c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Stream: stream})
					w := mustWorld(t)
					multi := 0
					for qi, q := range w.Questions[:6] {
						turns, st, err := runTokenTrajectory(context.Background(), c, w, q.Question, fmt.Sprint("q", qi), 6, int64(20+qi))
						if err != nil {
							t.Fatal(err)
						}
						if len(turns) > 1 {
							multi++
						}
						for i, tr := range turns {
							if len(tr.Logprobs) != len(tr.CompletionIDs) || len(tr.CompletionIDs) == 0 {
								t.Fatalf("q%d turn %d: %d logprobs for %d completion ids", qi, i, len(tr.Logprobs), len(tr.CompletionIDs))
							}
							if i == 0 {
								continue
							}
							prev := append(slices.Clone(turns[i-1].PromptIDs), turns[i-1].CompletionIDs...)
							if !slices.Equal(tr.PromptIDs[:min(len(prev), len(tr.PromptIDs))], prev) || len(tr.PromptIDs) <= len(prev) {
								t.Fatalf("q%d turn %d: the prompt does not extend the previous prompt and completion", qi, i)
							}
							if tr.ReusedPromptTokens != len(prev) {
								t.Errorf("q%d turn %d: reused %d prompt tokens, want %d", qi, i, tr.ReusedPromptTokens, len(prev))
							}
						}
						seqs, drifts, err := Sequences(turns)
						if err != nil || len(seqs) != 1 || len(drifts) != 0 {
							t.Fatalf("q%d: %d sequences, %d drifts (%v), want 1 and 0", qi, len(seqs), len(drifts), err)
						}
						last := turns[len(turns)-1]
						if want := append(slices.Clone(last.PromptIDs), last.CompletionIDs...); !slices.Equal(seqs[0].InputIDs, want) {
							t.Errorf("q%d: the sequence's %d ids are not the last prompt and completion (%d)", qi, len(seqs[0].InputIDs), len(want))
						}
						// Mask 1 exactly on the sampled ids, with their logprobs.
						pos := 0
						for _, tr := range turns {
							start := len(tr.PromptIDs)
							for j, id := range tr.CompletionIDs {
								k := start + j
								if seqs[0].InputIDs[k] != id || seqs[0].LossMask[k] != 1 || seqs[0].Logprobs[k] != tr.Logprobs[j] {
									t.Fatalf("q%d: position %d is not the engine's sampled id and logprob", qi, k)
								}
							}
							for k := pos; k < start; k++ {
								if seqs[0].LossMask[k] != 0 {
									t.Fatalf("q%d: prompt position %d has mask 1", qi, k)
								}
							}
							pos = start + len(tr.CompletionIDs)
						}
						if st.Restarts() != 0 {
							t.Errorf("q%d: %d restarts", qi, st.Restarts())
						}
					}
					if multi == 0 {
						t.Fatal("no question took more than one turn: the test shows nothing")
					}
				})
			}
		}
	}
}

// TestReRenderingDrifts documents what the token path is for: with a
// template that drops earlier reasoning, re-sending the conversation breaks
// the prefix and splits trajectories.
func TestReRenderingDrifts(t *testing.T) {
	cfg := simConfig(DialectVLLM, 3)
	cfg.StripReasoning = true
	s := mustSim(t, cfg, nil)
	c := mustClient(t, Config{Role: "executor", Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
	w := mustWorld(t)
	drifted := 0
	for qi, q := range w.Questions[:6] {
		turns, err := runTrajectory(context.Background(), c, w, q.Question, fmt.Sprint("q", qi), 6, int64(20+qi))
		if err != nil {
			t.Fatal(err)
		}
		if _, drifts, _ := Sequences(turns); len(drifts) > 0 {
			drifted++
		}
	}
	if drifted == 0 {
		t.Fatal("no trajectory drifted on re-rendering: the sim's template no longer drops reasoning")
	}
}

// TestTokenPathFallsBackWithoutTokenRoutes: an engine without the token
// routes gets whole conversations again, with a warning, and the drift
// the template causes is counted, never hidden.
func TestTokenPathFallsBackWithoutTokenRoutes(t *testing.T) {
	cfg := simConfig(DialectVLLM, 3)
	cfg.StripReasoning = true
	cfg.Disabled = simllm.RouteFamilies{Tokenize: true}
	s := mustSim(t, cfg, nil)
	logs := &syncBuffer{}
	c := mustClient(t, Config{Role: "executor", Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Logger: bufferLogger(logs)})
	w := mustWorld(t)
	drifted := 0
	for qi, q := range w.Questions[:6] {
		turns, _, err := runTokenTrajectory(context.Background(), c, w, q.Question, fmt.Sprint("q", qi), 6, int64(20+qi))
		if err != nil {
			t.Fatal(err)
		}
		if _, drifts, _ := Sequences(turns); len(drifts) > 0 {
			drifted++
		}
	}
	if !strings.Contains(logs.String(), "no token route") {
		t.Errorf("no warning that the engine lacks token routes; log:\n%s", logs.String())
	}
	if drifted == 0 {
		t.Error("no drift counted on the fallback with a template that drops reasoning")
	}
}

// TestReusedPromptFraction: the metric of the share of the previous
// prompt and completion each follow-up prompt reuses is 1 on the token path and below 1 where the template
// re-renders the past differently (the fallback).
func TestReusedPromptFraction(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprint("fallback=", fallback), func(t *testing.T) {
			cfg := simConfig(DialectVLLM, 3)
			cfg.StripReasoning = true
			if fallback {
				cfg.Disabled = simllm.RouteFamilies{Tokenize: true}
			}
			s := mustSim(t, cfg, nil)
			m := NewMetrics()
			c := mustClient(t, Config{Role: "executor", Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Metrics: m})
			w := mustWorld(t)
			followUps, reused, prompt := 0, 0, 0
			for qi, q := range w.Questions[:4] {
				turns, _, err := runTokenTrajectory(context.Background(), c, w, q.Question, fmt.Sprint("q", qi), 6, int64(20+qi))
				if err != nil {
					t.Fatal(err)
				}
				followUps += len(turns) - 1
				for _, tr := range turns {
					reused += tr.ReusedPromptTokens
					prompt += len(tr.PromptIDs)
				}
			}
			if followUps == 0 {
				t.Fatal("no follow-up turn: the test shows nothing")
			}
			h := histogramOf(t, m, "executor")
			if int(h.GetSampleCount()) != followUps {
				t.Fatalf("%d observations, want one per follow-up turn (%d)", h.GetSampleCount(), followUps)
			}
			if got := testutil.ToFloat64(m.reusedTokens.WithLabelValues("executor", s.ts.URL)); int(got) != reused {
				t.Errorf("reused tokens counter %v, want %d", got, reused)
			}
			mean := h.GetSampleSum() / float64(h.GetSampleCount())
			if !fallback && mean != 1 {
				t.Errorf("token path: mean reused fraction %v, want 1", mean)
			}
			if fallback && (mean >= 1 || reused == 0) {
				t.Errorf("fallback with a template that drops reasoning: mean reused fraction %v (%d of %d tokens), want some but not all", mean, reused, prompt)
			}
		})
	}
}

// histogramOf reads the reused-fraction histogram of role.
func histogramOf(t *testing.T, m *Metrics, role string) *dto.Histogram {
	t.Helper()
	var out dto.Metric
	obs, err := m.reusedFraction.GetMetricWithLabelValues(role)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.(prometheus.Histogram).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetHistogram()
}

// TestPreflightTokensNamesTheRoute: the preflight probe finds the token
// path on an engine that has it, and on one without it (no tokenize
// route, or token-id prompts refused) says so loudly and takes the
// messages path from the first call on.
func TestPreflightTokensNamesTheRoute(t *testing.T) {
	for _, tc := range []struct {
		dialect  string
		disabled simllm.RouteFamilies
		want     string
	}{
		{DialectVLLM, simllm.RouteFamilies{}, "tokens: render /tokenize, generate /v1/completions (token-id prompt), parse qwen3 (client)"},
		{DialectSGLang, simllm.RouteFamilies{}, "tokens: render /v1/tokenize, generate /generate (input_ids), parse qwen3 (client)"},
		{DialectVLLM, simllm.RouteFamilies{Tokenize: true}, RouteMessages},
		{DialectVLLM, simllm.RouteFamilies{TokenPrompt: true}, RouteMessages},
		{DialectSGLang, simllm.RouteFamilies{TokenPrompt: true}, RouteMessages},
	} {
		t.Run(fmt.Sprintf("%s/%+v", tc.dialect, tc.disabled), func(t *testing.T) {
			cfg := simConfig(tc.dialect, 3)
			cfg.Disabled = tc.disabled
			s := mustSim(t, cfg, nil)
			logs := &syncBuffer{}
			c := mustClient(t, Config{Role: "executor", Dialect: tc.dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Logger: bufferLogger(logs)})
			if err := c.PreflightTokens(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := c.TokenRoute(); got != tc.want {
				t.Fatalf("route %q, want %q", got, tc.want)
			}
			if tc.want == RouteMessages && !strings.Contains(logs.String(), "messages path") {
				t.Errorf("the fallback was not said; log:\n%s", logs.String())
			}
			if !strings.Contains(logs.String(), "executor") {
				t.Errorf("the log does not name the role:\n%s", logs.String())
			}
		})
	}
}
