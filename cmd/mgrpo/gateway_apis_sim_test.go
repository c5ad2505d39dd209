package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestTrainSimGatewayResponsesAgent trains both roles from the OpenAI
// Agents SDK example on its default model class (the Responses API,
// examples/openai-agents-js/responses.js), unstreamed and streamed.
func TestTrainSimGatewayResponsesAgent(t *testing.T) {
	trainJSAgent(t, "responses.js", "@openai/agents", false)
}

// TestTrainSimGatewayMessagesAgent trains both roles from the Anthropic
// SDK tool-use loop (the Messages API, examples/openai-agents-js/messages.js),
// unstreamed and streamed; its executors are linked to the planner's
// tool_use blocks by the delegation header.
func TestTrainSimGatewayMessagesAgent(t *testing.T) {
	trainJSAgent(t, "messages.js", "@anthropic-ai/sdk", true)
}

// trainJSAgent serves script as a push agent, unstreamed then streamed,
// and trains two steps against it.
func trainJSAgent(t *testing.T, script, pkg string, linked bool) {
	if testing.Short() {
		t.Skip("trains in the sim world")
	}
	dir := filepath.Join("..", "..", "examples", "openai-agents-js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
		t.Skipf("%s/node_modules/%s is missing: run `npm ci` there (.ci/run does)", dir, pkg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, stream := range []string{"0", "1"} {
		t.Run("stream="+stream, func(t *testing.T) {
			url := startNode(t, node, dir, script, "STREAM="+stream)
			out := filepath.Join(t.TempDir(), "out")
			if code, _, stderr := runCLI(t, simTrainArgs(out, 2, "--agent-url", url)...); code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			checkGatewayRun(t, out, 2, linked)
		})
	}
}

// TestRolloutStandaloneSimAgentsNoSearchProvider runs `mgrpo rollout
// --agent-url` with the Responses and the Messages example against
// standalone sim servers and no search settings at all: the agents run
// their own tools, so the run starts (preflight says it skipped the search
// probe), exits 0, no rollout fails, and both roles have samples.
func TestRolloutStandaloneSimAgentsNoSearchProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against sim servers")
	}
	dir := filepath.Join("..", "..", "examples", "openai-agents-js")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, tc := range []struct{ script, pkg string }{{"responses.js", "@openai/agents"}, {"messages.js", "@anthropic-ai/sdk"}} {
		t.Run(tc.script, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", tc.pkg)); err != nil {
				t.Skipf("%s/node_modules/%s is missing: run `npm ci` there (.ci/run does)", dir, tc.pkg)
			}
			tmp := t.TempDir()
			s := startSimServers(t, tmp, simllm.DefaultConfig(), 2)
			url := startNode(t, node, dir, tc.script, "SIM_WEB_URL="+s.webURL)
			out := filepath.Join(tmp, "out")
			code, _, stderr := runCLI(t, "rollout", "--tasks", s.tasks, "--out", out, "--planner-url", s.llmURL, "--planner-model", "sim-qwen3",
				"--executor-url", s.llmURL, "--executor-model", "sim-qwen3", "--agent-url", url, "--batch-size", "2", "--group-size", "2")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "skipped the search provider probe") {
				t.Errorf("stderr does not say the search probe was skipped:\n%s", stderr)
			}
			for _, f := range []string{rollout.PlannerFile, rollout.ExecutorFile} {
				paths, _ := filepath.Glob(filepath.Join(out, "**", f))
				more, _ := filepath.Glob(filepath.Join(out, f))
				paths = append(paths, more...)
				n := 0
				for _, p := range paths {
					n += len(readLines(t, p))
				}
				if n == 0 {
					t.Errorf("no %s samples under %s", f, out)
				}
			}
			paths, _ := filepath.Glob(filepath.Join(out, "**", rollout.RolloutsFile))
			more, _ := filepath.Glob(filepath.Join(out, rollout.RolloutsFile))
			for _, p := range append(paths, more...) {
				for _, l := range readLines(t, p) {
					var rec struct {
						Tree struct {
							Planner struct {
								Error string `json:"error"`
							} `json:"planner"`
						} `json:"tree"`
					}
					if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Tree.Planner.Error != "" {
						t.Errorf("rollout %v: %s", err, rec.Tree.Planner.Error)
					}
				}
			}
		})
	}
}
