package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimWithAnEndpointIsAConfigurationError: --sim serves every role from
// the simulated world, so an endpoint or a model the user named with it is
// refused (exit 2, both flags named, nothing written) rather than
// replaced.
func TestSimWithAnEndpointIsAConfigurationError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"rollout", "--sim", "--planner-url", "http://127.0.0.1:8000/v1", "--planner-model", "X"},
			[]string{"--sim and --planner-url", "--sim and --planner-model", `"X"`}},
		{[]string{"train", "--sim", "--executor-model", "Qwen/Qwen3-8B"}, []string{"--sim and --executor-model"}},
		{[]string{"eval", "--sim", "--benchmark", "webwalkerqa", "--judge-url", "sim", "--executor-url", "http://127.0.0.1:8001/v1"},
			[]string{"--sim and --executor-url"}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runCLI(t, append(tc.args, "--out", out)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q does not name %q", tc.args, stderr, w)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: a refused run left %s behind", tc.args, out)
		}
	}
	// The sim's own model name is no conflict.
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, "--log-level", "error", "rollout", "--sim", "--planner-model", "sim-qwen3", "--batch-size", "1", "--group-size", "2", "--out", out); code != 0 {
		t.Errorf("--sim --planner-model sim-qwen3: exit %d: %s", code, stderr)
	}
}

// TestRefusedExecutorSideLeavesNothing: `train --role executor` with an
// --out that holds no planner side's store is refused (exit 2) without
// creating the directory or a store.db in it.
func TestRefusedExecutorSideLeavesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, "train", "--sim", "--role", "executor", "--out", out)
	if code != 2 || !strings.Contains(stderr, "--role planner") {
		t.Errorf("exit %d, stderr %q; want 2 saying to start the planner side first", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused executor side left %s behind", out)
	}
}
