package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestSimMCPRollout runs a sim rollout whose executors get the sim's MCP
// server (tools.mcp url sim): its notes tool is called, the calls are in
// the tree (rollouts.jsonl), their observations in the executors' token
// sequences (executor.jsonl holds the prompt ids of the turns after them),
// the usage counts them, and a rerun with the same seed writes the same
// bytes.
func TestSimMCPRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim")
	}
	root := t.TempDir()
	cfg := filepath.Join(root, "mcp.yaml")
	if err := os.WriteFile(cfg, []byte("tools:\n  mcp:\n    - name: sim\n      url: sim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string) string {
		return runOnUsualPorts(t, root, name, func(out string) error {
			code, _, stderr := runCLI(t, "--log-level", "error", "rollout", "--sim", "--config", cfg, "--seed", "3", "--run", "mcp",
				"--steps", "1", "--batch-size", "4", "--group-size", "2", "--out", out)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			return nil
		})
	}
	a, b := run("a"), run("b")
	read := func(dir, f string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tree := string(read(a, "step-000001/rollouts.jsonl"))
	if !strings.Contains(tree, `"name":"notes_lookup"`) || !strings.Contains(tree, "Notes about ") {
		t.Errorf("rollouts.jsonl has no notes_lookup call with its observation")
	}
	if !strings.Contains(tree, `"provider":"mcp:sim"`) {
		t.Errorf("rollouts.jsonl does not name the MCP server")
	}
	summary := string(read(a, "summary.jsonl"))
	if !strings.Contains(summary, `"mcp_calls":{"sim.notes_lookup":`) {
		t.Errorf("summary.jsonl counts no MCP calls: %s", summary)
	}
	// The observations are in the samples: some executor sample's token
	// sequence decodes to text holding a notes observation.
	tok := simllm.NewTokenizer()
	found := false
	for _, line := range bytes.Split(bytes.TrimSpace(read(a, "step-000001/executor.jsonl")), []byte("\n")) {
		var s struct {
			InputIDs []int `json:"input_ids"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatal(err)
		}
		if text, err := tok.Decode(s.InputIDs); err == nil && strings.Contains(text, "Notes about ") {
			found = true
			break
		}
	}
	if !found {
		t.Error("no executor sample's tokens hold a notes observation")
	}
	for _, f := range []string{"executor.jsonl", "planner.jsonl", "rollouts.jsonl", "stats.jsonl"} {
		if !bytes.Equal(read(a, "step-000001/"+f), read(b, "step-000001/"+f)) {
			t.Errorf("step-000001/%s differs between two runs of one seed", f)
		}
	}
}

// TestToolMCPCommands lists and calls the tools of the pinned
// server-everything over stdio through mgrpo tool mcp, and checks the exit
// statuses: 0, 1 for an error observation, 2 for a bad command line or
// configuration naming what is wrong.
func TestToolMCPCommands(t *testing.T) {
	script, err := filepath.Abs("../../tools/mcp/testdata/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Skip("server-everything is not installed: run `npm ci` in tools/mcp/testdata/npm (.ci/run does)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.yaml")
	yaml := "tools:\n  mcp:\n    - name: every\n      command: node\n      args: [" + script + ", stdio]\n      allow: [echo, get-sum]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("tools:\n  mcp:\n    - name: gone\n      command: /nonexistent/server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"list", []string{"tool", "mcp", "list", "--config", cfg}, 0, "get-sum\n  server every, tool get-sum"},
		{"call", []string{"tool", "mcp", "call", "every", "get-sum", "--args", `{"a": 2, "b": 3}`, "--config", cfg}, 0, "The sum of 2 and 3 is 5."},
		{"call with flags first", []string{"tool", "mcp", "call", "--config", cfg, "--args", `{"message": "hi"}`, "every", "echo"}, 0, "Echo: hi"},
		{"arguments against the schema", []string{"tool", "mcp", "call", "every", "get-sum", "--args", `{"a": "x"}`, "--config", cfg}, 1, "Invalid arguments for get-sum"},
		{"unknown server", []string{"tool", "mcp", "call", "nope", "echo", "--config", cfg}, 2, `server "nope": not in tools.mcp`},
		{"tool left out by allow", []string{"tool", "mcp", "call", "every", "get-env", "--config", cfg}, 2, `tool "get-env"`},
		{"missing command", []string{"tool", "mcp", "list", "--config", bad}, 2, "tools.mcp.gone.command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("output does not say %q:\nstdout %s\nstderr %s", tc.want, stdout, stderr)
			}
		})
	}
}

// TestToolMCPListSimServer: `url: sim`, as docs/tools.md documents it, is
// the simulated world's MCP server for `mgrpo tool mcp` too.
func TestToolMCPListSimServer(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	if err := os.WriteFile(cfg, []byte("tools:\n  mcp:\n    - name: sim\n      url: sim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "--log-level", "error", "tool", "mcp", "list", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "server sim, tool calculator") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the sim server's tools", code, stdout, stderr)
	}
}
