package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainRefusesOffPolicySampling checks that a training run whose
// planner samples at temperature 0.6 against vLLM, which reports raw
// logprobs unless launched otherwise, exits 2 before any rollout, saying
// how to launch the server; stating logprobs_mode: processed lets it pass
// that check.
func TestTrainRefusesOffPolicySampling(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("planner:\n  temperature: 0.6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := trainArgs(out, "http://127.0.0.1:1", "frozen-sub", 1, "--config", cfg)
	for i, a := range args {
		if a == "sglang" && args[i-1] == "--dialect" {
			args[i] = "vllm"
		}
	}
	code, _, stderr := runCLI(t, args...)
	if code != 2 || !strings.Contains(stderr, "--logprobs-mode processed_logprobs") || !strings.Contains(stderr, "temperature 0.6") {
		t.Errorf("exit %d, %q; want 2 naming the temperature and the launch fix", code, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "step-*")); len(m) != 0 {
		t.Errorf("rollouts ran: %v", m)
	}
	if err := os.WriteFile(cfg, []byte("planner:\n  temperature: 0.6\n  logprobs_mode: processed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, args...)
	if strings.Contains(stderr, "logprobs") {
		t.Errorf("with logprobs_mode processed: exit %d, %q; want the sampling check passed", code, stderr)
	}
}
