package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalScore(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"gaia number with unit", []string{"eval", "score", "--benchmark", "gaia", "--prediction", "$1,000", "--answer", "1000"}, 0, "correct\n"},
		{"gaia wrong", []string{"eval", "score", "--benchmark", "gaia", "--prediction", "Paris", "--answer", "Lyon"}, 0, "incorrect\n"},
		{"missing answer", []string{"eval", "score", "--prediction", "x"}, 2, ""},
		{"judge url without model", []string{"eval", "score", "--prediction", "x", "--answer", "x", "--judge-url", "http://127.0.0.1:1"}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode || stdout != tt.wantOut && tt.wantOut != "" {
				t.Errorf("exit %d stdout %q, want %d %q (stderr %s)", code, stdout, tt.wantCode, tt.wantOut, stderr)
			}
		})
	}
}

func TestEvalScoreFileAndCompare(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(in, []byte(`{"id":"a","prediction":"42","answer":"42"}`+"\n"+`{"id":"b","prediction":"41","answer":"42"}`+"\n"), 0o644)
	code, stdout, stderr := runCLI(t, "eval", "score", "--benchmark", "gaia", "--file", in)
	if code != 0 || !strings.Contains(stdout, `"correct":true`) || !strings.Contains(stdout, `"correct":false`) {
		t.Fatalf("file mode: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for name, lines := range map[string]string{
		"a": `{"id":"q1","benchmark":"jsonl","run":0,"correct":false}` + "\n" + `{"id":"q2","benchmark":"jsonl","run":0,"correct":true}` + "\n",
		"b": `{"id":"q1","benchmark":"jsonl","run":0,"correct":true}` + "\n" + `{"id":"q2","benchmark":"jsonl","run":0,"correct":true}` + "\n",
	} {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "results.jsonl"), []byte(lines), 0o644)
	}
	code, stdout, stderr = runCLI(t, "eval", "compare", filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if code != 0 || !strings.Contains(stdout, "q1") {
		t.Errorf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Two questions in common: compared, with a warning that they are few.
	if !strings.Contains(stderr, "2 question(s) in common") || !strings.Contains(stderr, "too few for a meaningful interval") {
		t.Errorf("compare of 2 common questions: no warning that they are few:\n%s", stderr)
	}
	// No question in common: a bad command line, not accuracies of 0.
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	os.WriteFile(filepath.Join(dir, "c", "results.jsonl"), []byte(`{"id":"q9","benchmark":"jsonl","run":0,"correct":true}`+"\n"), 0o644)
	code, stdout, stderr = runCLI(t, "eval", "compare", filepath.Join(dir, "a"), filepath.Join(dir, "c"))
	if code != 2 || !strings.Contains(stderr, "none in common") || strings.Contains(stdout, "0.0000") {
		t.Errorf("compare with no common question: exit %d, want 2 naming it\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "eval", "report", filepath.Join(dir, "b"))
	if code != 0 {
		t.Errorf("report: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "b", "report.md")); err != nil {
		t.Errorf("report.md: %v", err)
	}
}

func TestEvalRunOnSimResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the planner against the sim world")
	}
	dir := t.TempDir()
	args := []string{"eval", "--sim", "--benchmark", "webwalkerqa", "--scorer", "exact", "--runs", "2", "--limit", "4", "--out", dir}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, "Avg Pass@1") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if got := readLines(t, filepath.Join(dir, "results.jsonl")); len(got) != 8 {
		t.Errorf("results.jsonl has %d lines, want 4 questions × 2 runs", len(got))
	}
	for _, f := range []string{"summary.json", "report.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, stdout, _ = runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, "(8 resumed, 0 run now)") {
		t.Errorf("rerun: exit %d, stdout %q; want everything resumed", code, stdout)
	}
	// Fewer questions into the same directory would rewrite its report
	// for 2 of its 4 questions (issue 50 item 5): refused, unless asked.
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	narrower := []string{"eval", "--sim", "--benchmark", "webwalkerqa", "--scorer", "exact", "--runs", "2", "--limit", "2", "--out", dir}
	code, stdout, stderr = runCLI(t, narrower...)
	for _, w := range []string{"4 question(s) × 2 run(s)", "select 2 question(s) × 2 run(s)", "leave out 4 recorded pair(s)", "a new --out", "--replace"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("another --limit: stderr lacks %q:\n%s", w, stderr)
		}
	}
	if code != 2 || stdout != "" {
		t.Errorf("another --limit: exit %d, stdout %q; want 2 and nothing", code, stdout)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "report.md")); string(again) != string(report) {
		t.Error("the refused eval rewrote report.md")
	}
	code, stdout, stderr = runCLI(t, append(narrower, "--replace")...)
	if code != 0 || !strings.Contains(stdout, "2 questions × 2 runs (4 resumed, 0 run now)") {
		t.Errorf("--replace: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if got := readLines(t, filepath.Join(dir, "results.jsonl")); len(got) != 8 {
		t.Errorf("--replace: results.jsonl has %d lines, want all 8 kept", len(got))
	}
	code, _, stderr = runCLI(t, "eval", "--sim", "--out", dir)
	if code != 2 || !strings.Contains(stderr, "--benchmark") {
		t.Errorf("missing --benchmark: exit %d, stderr %q", code, stderr)
	}
}
