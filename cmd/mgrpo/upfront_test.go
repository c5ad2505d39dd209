package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealServerAttemptReportsEveryProblem runs a first attempt against
// real servers with three mistakes at once (issue 50 item 4: it took three
// runs to learn them): more --batch-size than tasks, the search provider's
// key not set, and endpoints that nobody serves. One run must name them
// all, with what fixes each, exit 2 and leave nothing behind.
func TestRealServerAttemptReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	lines := `{"id":"a","question":"What is one plus one?","answer":"2"}` + "\n" +
		`{"id":"b","question":"What is two plus two?","answer":"4"}` + "\n"
	if err := os.WriteFile(tasks, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERPER_API_KEY", "")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "rollout", "--tasks", tasks, "--out", out, "--batch-size", "4", "--group-size", "2",
		"--planner-url", "http://127.0.0.1:1/v1", "--planner-model", "m", "--executor-url", "http://127.0.0.1:2/v1", "--executor-model", "m",
		"--search-provider", "serper")
	if code != 2 {
		t.Errorf("exit %d, want 2:\n%s", code, stderr)
	}
	for _, want := range []string{
		"4 problems",
		"batch_size (--batch-size): 4: more than the 2 tasks", "lower --batch-size or add tasks",
		"search.provider (--search-provider)", "SERPER_API_KEY",
		"planner endpoint http://127.0.0.1:1", "executor endpoint http://127.0.0.1:2", "unreachable",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Count(stderr, "before starting") != 1 {
		t.Errorf("want the problems in one message:\n%s", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout of a refused run: %q", stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the refused run left %s behind", out)
	}
}
