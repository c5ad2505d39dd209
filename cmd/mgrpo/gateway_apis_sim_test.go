package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
