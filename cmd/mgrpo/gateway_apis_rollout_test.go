package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestRolloutStandaloneSimAgentsNoSearchProvider is the acceptance run of
// the three APIs the gateway serves: each example agent (push.js on Chat
// Completions, responses.js on Responses, messages.js on Messages),
// unstreamed and streamed, against `mgrpo rollout --agent-url …
// --gateway-addr …` on a standalone sim with no search settings at all
// (the agents run their own tools, so preflight skips the search probe).
// The run exits 0; every model call the engine served for the agent is a
// turn of its rollout's tree (none foreign, none failed); both roles have
// samples, K·d̄ executor samples per query, no drift and no history edit;
// and every sample's mask-1 tokens and logprobs are exactly a generation
// of the engine's own log, on the very prompt the engine saw.
func TestRolloutStandaloneSimAgentsNoSearchProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against sim servers")
	}
	dir := filepath.Join("..", "..", "examples", "openai-agents-js")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, tc := range []struct{ script, pkg string }{
		{"push.js", "@openai/agents"}, {"responses.js", "@openai/agents"}, {"messages.js", "@anthropic-ai/sdk"},
	} {
		for _, stream := range []string{"0", "1"} {
			t.Run(tc.script+"/stream="+stream, func(t *testing.T) {
				if _, err := os.Stat(filepath.Join(dir, "node_modules", tc.pkg)); err != nil {
					t.Skipf("%s/node_modules/%s is missing: run `npm ci` there (.ci/run does)", dir, tc.pkg)
				}
				tmp := t.TempDir()
				cfg := simllm.DefaultConfig()
				cfg.RecordGenerations = true
				s := startSimServers(t, tmp, cfg, 2)
				url := startNode(t, node, dir, tc.script, "SIM_WEB_URL="+s.webURL, "STREAM="+stream)
				out := filepath.Join(tmp, "out")
				code, _, stderr := runCLI(t, "rollout", "--tasks", s.tasks, "--out", out, "--planner-url", s.llmURL, "--planner-model", "sim-qwen3",
					"--executor-url", s.llmURL, "--executor-model", "sim-qwen3", "--agent-url", url, "--gateway-addr", freeAddr(t),
					"--batch-size", "2", "--group-size", "2")
				if code != 0 {
					t.Fatalf("exit %d:\n%s", code, stderr)
				}
				if !strings.Contains(stderr, "skipped the search provider probe") {
					t.Errorf("stderr does not say the search probe was skipped:\n%s", stderr)
				}
				checkEngineTurns(t, out, agentGenerations(t, s.engine))
			})
		}
	}
}

// freeAddr is a loopback address no one listens on (the kernel's pick).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// agentGenerations is the engine's generation log without the preflight's
// probes (one-token "Say OK." calls per role): the agents' model calls.
func agentGenerations(t *testing.T, engine *simllm.Server) []simllm.Generation {
	t.Helper()
	var out []simllm.Generation
	for _, g := range engine.Generations() {
		prompt, err := engine.Tokenizer().Decode(g.PromptIDs)
		if err != nil {
			t.Fatalf("the engine logged a prompt its tokenizer cannot decode: %v", err)
		}
		if !strings.Contains(prompt, "Say OK.") {
			out = append(out, g)
		}
	}
	return out
}

// checkEngineTurns checks a one-step run at out against the engine's
// generations: as many turns in the rollouts' trees as generations (every
// call the agent made is a turn, none foreign, no rollout failed), the
// summary's sample counts and zero drift, and every non-padding sample's
// mask-1 runs are generations of the log: the tokens before the run are
// the generation's prompt, the run its ids and its logprobs the engine's.
func checkEngineTurns(t *testing.T, out string, gens []simllm.Generation) {
	t.Helper()
	if len(gens) == 0 {
		t.Fatal("the engine logged no agent generation")
	}
	step := rollout.StepDir(out, 1)
	turns := 0
	for _, line := range readLines(t, filepath.Join(step, rollout.RolloutsFile)) {
		var rec rollout.RolloutRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Error != "" || rec.Tree == nil || rec.Tree.Planner == nil {
			t.Errorf("rollout %s failed: %s", rec.ID, rec.Error)
			continue
		}
		if len(rec.Tree.Foreign) > 0 || len(rec.Tree.Unmatched) > 0 {
			t.Errorf("rollout %s: %d foreign calls, unmatched executors %v; want every call in its tree", rec.ID, len(rec.Tree.Foreign), rec.Tree.Unmatched)
		}
		for _, tr := range append([]*rollout.TrajectoryRecord{rec.Tree.Planner}, rec.Tree.Executors...) {
			if tr.Error != "" {
				t.Errorf("rollout %s %s %d: %s", rec.ID, tr.Role, tr.Index, tr.Error)
			}
			for i, turn := range tr.Turns {
				if turn == nil {
					t.Errorf("rollout %s %s %d: turn %d is null", rec.ID, tr.Role, tr.Index, i)
				}
			}
			turns += len(tr.Turns)
		}
	}
	if turns != len(gens) {
		t.Errorf("the trees hold %d turns, the engine generated %d times for the agents: want every call a turn", turns, len(gens))
	}
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil || len(sums) != 1 {
		t.Fatalf("summary: %d steps, %v", len(sums), err)
	}
	sum := sums[0]
	k := sum.Rollouts / max(sum.Queries, 1)
	t.Logf("%d generations, %d rollouts of %d queries, %d planner and %d executor samples (d̄ %d), %d drift events, %d history edits",
		len(gens), sum.Rollouts, sum.Queries, sum.PlannerSamples, sum.ExecutorSamples, sum.DBar, sum.DriftEvents, sum.HistoryEdits)
	if sum.DriftEvents != 0 || sum.HistoryEdits != 0 {
		t.Errorf("%d drift events, %d history edits; want none", sum.DriftEvents, sum.HistoryEdits)
	}
	if sum.PlannerSamples != sum.Rollouts || sum.DBar == 0 || sum.ExecutorSamples != sum.Queries*k*sum.DBar {
		t.Errorf("%d planner samples for %d rollouts, %d executor samples for %d queries × K %d × d̄ %d; want one planner sample a rollout and K·d̄ executor samples a query",
			sum.PlannerSamples, sum.Rollouts, sum.ExecutorSamples, sum.Queries, k, sum.DBar)
	}
	for _, file := range []string{rollout.PlannerFile, rollout.ExecutorFile} {
		real := 0
		for n, line := range readLines(t, filepath.Join(step, file)) {
			var smp rollout.Sample
			if err := json.Unmarshal([]byte(line), &smp); err != nil {
				t.Fatal(err)
			}
			if smp.FinishReason == "padding" {
				continue
			}
			real++
			runs := 0
			for p := 0; p < len(smp.InputIDs); {
				if smp.LossMask[p] == 0 {
					if smp.Logprobs[p] != 0 {
						t.Errorf("%s line %d: token %d has mask 0 and logprob %g", file, n+1, p, smp.Logprobs[p])
					}
					p++
					continue
				}
				q := p
				for q < len(smp.InputIDs) && smp.LossMask[q] == 1 {
					q++
				}
				if !generated(gens, smp.InputIDs[:p], smp.InputIDs[p:q], smp.Logprobs[p:q]) {
					t.Errorf("%s line %d (%s, query %s): the mask-1 run at %d..%d is no generation of the engine on that prompt with those logprobs",
						file, n+1, smp.Role, smp.QueryID, p, q)
				}
				runs++
				p = q
			}
			if runs != smp.SampleTurns {
				t.Errorf("%s line %d: %d mask-1 runs for %d turns", file, n+1, runs, smp.SampleTurns)
			}
		}
		if real == 0 {
			t.Errorf("no %s sample that is not padding", file)
		}
	}
}

// generated reports whether the engine logged a generation of ids with
// logprobs lps on prompt.
func generated(gens []simllm.Generation, prompt, ids []int, lps []float64) bool {
	for _, g := range gens {
		if slices.Equal(g.IDs, ids) && slices.Equal(g.Logprobs, lps) && slices.Equal(g.PromptIDs, prompt) {
			return true
		}
	}
	return false
}
