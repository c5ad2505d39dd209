package llm

import (
	"context"
	"strings"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

func TestSimCapture(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			s := mustSim(t, simConfig(dialect, 1), nil)
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
			w := mustWorld(t)
			turns, err := runTrajectory(context.Background(), c, w, w.Questions[0].Question, "q0", 1, 11)
			if err != nil {
				t.Fatal(err)
			}
			tr := turns[0]
			tok := s.sim.Tokenizer()
			if got, want := len(tr.Logprobs), len(tr.CompletionIDs); got != want || got == 0 {
				t.Fatalf("logprobs %d, completion ids %d", got, want)
			}
			if got, want := tr.Usage.PromptTokens, len(tr.PromptIDs); got != want {
				t.Errorf("usage prompt tokens %d, prompt ids %d", got, want)
			}
			if tr.FinishReason != "length" {
				if got, want := int(tr.CompletionIDs[len(tr.CompletionIDs)-1]), tok.SpecialID(simllm.IMEnd); got != want {
					t.Errorf("last completion id %d, want EOS %d", got, want)
				}
			}
			text, err := tok.Decode(wideIDs(tr.CompletionIDs))
			if err != nil {
				t.Fatal(err)
			}
			if tr.Message.ReasoningContent != "" && !strings.Contains(text, tr.Message.ReasoningContent) {
				t.Errorf("completion text %q lacks reasoning %q", text, tr.Message.ReasoningContent)
			}
			for _, call := range tr.ToolCalls {
				if !strings.Contains(text, call.Function.Name) {
					t.Errorf("completion text lacks call %q", call.Function.Name)
				}
			}
			prompt, err := tok.Decode(wideIDs(tr.PromptIDs))
			if err != nil || !strings.HasSuffix(prompt, simllm.IMStart+"assistant\n") {
				t.Errorf("prompt does not end with the generation prompt: %q (%v)", tail(prompt), err)
			}
			if tr.WeightVersion == "" {
				t.Errorf("no weight version")
			}
			if tr.Attempts != 1 || tr.Endpoint == "" || tr.Latency <= 0 {
				t.Errorf("attempts %d endpoint %q latency %v", tr.Attempts, tr.Endpoint, tr.Latency)
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

// trajectoryCase runs several trajectories and returns their sequences and
// drifts.
func runMany(t *testing.T, c *Client, n, turns int) (seqs, drifts, multi int) {
	t.Helper()
	w := mustWorld(t)
	for i := range n {
		tr, err := runTrajectory(context.Background(), c, w, w.Questions[i].Question, "", turns, int64(100*i))
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) > 1 {
			multi++
		}
		s, d, err := c.Sequences(tr)
		if err != nil {
			t.Fatal(err)
		}
		checkSequences(t, tr, s, d)
		seqs += len(s)
		drifts += len(d)
	}
	return seqs, drifts, multi
}

// checkSequences verifies the mask invariants on real turns.
func checkSequences(t *testing.T, turns []*Turn, seqs []Sequence, drifts []Drift) {
	t.Helper()
	var sampled, masked int
	for _, tr := range turns {
		sampled += len(tr.CompletionIDs)
	}
	for _, s := range seqs {
		for i, m := range s.LossMask {
			if m == 1 {
				masked++
			} else if s.Logprobs[i] != 0 {
				t.Fatalf("logprob %v where mask is 0", s.Logprobs[i])
			}
		}
	}
	if sampled != masked {
		t.Fatalf("mask-1 tokens %d, sampled tokens %d", masked, sampled)
	}
	if len(seqs) != len(drifts)+1 {
		t.Fatalf("%d sequences, %d drifts", len(seqs), len(drifts))
	}
}

func TestSimMergeDefaultTemplate(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			s := mustSim(t, simConfig(dialect, 2), nil)
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
			const n = 6
			seqs, drifts, multi := runMany(t, c, n, 8)
			if multi == 0 {
				t.Fatal("no trajectory had more than one turn")
			}
			if seqs != n || drifts != 0 {
				t.Errorf("%d trajectories gave %d sequences and %d drifts, want one sequence each", n, seqs, drifts)
			}
		})
	}
}

func TestSimStripReasoningDrifts(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			cfg := simConfig(dialect, 3)
			cfg.StripReasoning = true
			s := mustSim(t, cfg, nil)
			met := NewMetrics()
			c := mustClient(t, Config{Role: "executor", Dialect: dialect, Endpoints: []string{s.ts.URL}, CaptureTokens: true, Metrics: met})
			_, drifts, multi := runMany(t, c, 6, 8)
			if multi == 0 {
				t.Fatal("no trajectory had more than one turn")
			}
			if drifts == 0 {
				t.Fatal("no drift with the reasoning-stripping template")
			}
			if got := counterValue(t, met.drifts.WithLabelValues("executor")); int(got) != drifts {
				t.Errorf("drift metric %v, want %d", got, drifts)
			}
		})
	}
}
