package farm

import (
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// TestRolloutDeadlineHolds runs rollouts that need longer than their
// wall-clock limit: every model call takes at least the sim's TTFT, the
// limit is 1.5 of them, and every rollout needs at least two calls in
// sequence before it can end (the planner's first turn delegates or the
// single agent searches). Each ends at the limit with what it has: the
// turn it took, its sequences and samples, and the limit as its recorded
// error; the step goes on and is written whole, within the limit plus a
// margin for scoring and writing.
func TestRolloutDeadlineHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("plays rollouts against the sim world")
	}
	const (
		B, K      = 2, 4
		ttft      = time.Second
		wallClock = ttft * 3 / 2
		bound     = wallClock + 30*time.Second
	)
	cfg := simllm.DefaultConfig()
	cfg.Seed = 5
	cfg.TTFT = ttft
	// A planner that guesses on its first turn would end in one call; the
	// test needs every rollout to take two.
	cfg.Skills = policy.DefaultSkills()
	cfg.Skills.Guess = 0
	llmURL, webURL := startSimServers(t, cfg)
	for _, mode := range []rollout.Mode{rollout.ModeMGRPO, rollout.ModeSingle} {
		t.Run(string(mode), func(t *testing.T) {
			rec := &recordingRunner{inner: newSimRunner(t, llmURL, webURL, simRunnerConfig{mode: mode,
				rollout: agents.RolloutBudget{MaxDelegations: 16, WallClock: wallClock}})}
			dir := t.TempDir()
			fc := Config{Run: "deadline", Seed: 3, Steps: 1, BatchSize: B, GroupSize: K, Mode: mode, DBar: rollout.DBarSpec{Fixed: 1},
				Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: B * K, Runner: rec, Sink: rollout.DirSink{Dir: dir}}
			start := time.Now()
			sums := mustRunFarm(t, fc, simTasks(t, B))
			if wall := time.Since(start); wall >= bound {
				t.Errorf("the step took %v, want less than the rollout limit %v plus 30s", wall, wallClock)
			}
			if sums[0].Rollouts != B*K || sums[0].FailedRollouts != B*K {
				t.Errorf("summary: %d rollouts, %d failed; want all %d cut by the limit", sums[0].Rollouts, sums[0].FailedRollouts, B*K)
			}
			planner, _, stats := mustReadStep(t, dir, 1)
			if len(stats) != B || len(planner) < B*K {
				t.Errorf("step: %d queries, %d planner samples; want %d and at least %d", len(stats), len(planner), B, B*K)
			}
			for id, tree := range rec.trees {
				p := tree.Planner
				if !strings.Contains(p.Error, agents.ErrWallClock.Error()) || !strings.Contains(p.Error, wallClock.String()) {
					t.Errorf("%s: planner error %q, want the wall-clock limit of %v", id, p.Error, wallClock)
				}
				if len(p.Turns) == 0 || p.FormatOK {
					t.Errorf("%s: %d planner turns kept, format valid %v; want the turns taken before the limit, format invalid", id, len(p.Turns), p.FormatOK)
				}
				if p.FinishReason() != "error" {
					t.Errorf("%s: finish reason %q, want error", id, p.FinishReason())
				}
			}
		})
	}
}
