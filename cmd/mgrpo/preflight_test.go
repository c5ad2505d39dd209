package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestMisconfiguredRunsStopBeforeAnyRollout runs again what a new user got
// wrong against real servers (issue 26: each ran to the end with every
// rollout failed and exit 0) and checks each now stops before any
// rollout, naming what to fix, and leaves nothing on disk.
func TestMisconfiguredRunsStopBeforeAnyRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against sim servers")
	}
	dir := t.TempDir()
	s := startSimServers(t, dir, simllm.DefaultConfig(), 2)
	base := func(out string, over map[string]string) []string {
		flags := map[string]string{"--planner-url": s.llmURL, "--planner-model": "sim-qwen3", "--executor-url": s.llmURL,
			"--executor-model": "sim-qwen3", "--search-provider": "searxng", "--search-url": s.webURL, "--allow-host": s.webHost}
		for k, v := range over {
			flags[k] = v
		}
		args := []string{"rollout", "--tasks", s.tasks, "--out", out, "--batch-size", "1", "--group-size", "2"}
		for k, v := range flags {
			args = append(args, k, v)
		}
		return args
	}
	tests := []struct {
		name     string
		over     map[string]string
		train    []string
		wantCode int
		want     []string
	}{
		{"a model the server does not serve", map[string]string{"--planner-model": "qwen-typo"}, nil, 2,
			[]string{`does not serve model "qwen-typo"`, `"sim-qwen3"`, "--planner-model"}},
		{"the wrong dialect", map[string]string{"--dialect": "sglang"}, nil, 2,
			[]string{"dialect sglang", "--dialect vllm"}},
		{"a dead search URL", map[string]string{"--search-url": "http://127.0.0.1:1"}, nil, 2,
			[]string{"--search-provider", "searxng", "127.0.0.1:1", "probe query"}},
		{"a dead trainer", nil, []string{"--planner-trainer", "tinker+http://127.0.0.1:1", "--base-model-planner", "m", "--mode", "frozen-sub", "--weight-sync", "none"}, 1,
			[]string{"planner trainer", "unreachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := base(out, tt.over)
			if tt.train != nil {
				args[0] = "train"
				args = append(args, tt.train...)
			}
			start := time.Now()
			code, _, stderr := runCLI(t, args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d:\n%s", code, tt.wantCode, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				entries, _ := os.ReadDir(out)
				t.Errorf("the refused run left %s behind (%d entries)", out, len(entries))
			}
			t.Logf("refused after %v", time.Since(start).Round(time.Millisecond))
		})
	}
}
