package main

import (
	"strings"
	"testing"
)

func TestEvalHelpSaysWhatEvalWrites(t *testing.T) {
	_, stdout, _ := runCLI(t, "eval", "--help")
	for _, want := range []string{"results.jsonl", "summary.json", "report.md"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("eval --help does not name %s", want)
		}
	}
	if strings.Contains(stdout, "step-NNNNNN") {
		t.Errorf("eval --help describes a run's step folders:\n%s", stdout)
	}
	if _, stdout, _ := runCLI(t, "rollout", "--help"); !strings.Contains(stdout, "step-NNNNNN") {
		t.Errorf("rollout --help lost its --out description")
	}
}
