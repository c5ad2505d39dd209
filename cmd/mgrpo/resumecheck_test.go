package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeWithChangedSettingsNamesThem resumes a sim run with other
// settings (issue 50 item 4: the refusal named no key, exited 1 and
// printed an empty step table first) and checks that the refusal names
// each key that differs with the run's value and the new one, exits 2,
// prints nothing on stdout and leaves the run as it was.
func TestResumeWithChangedSettingsNamesThem(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	small := []string{"--sim", "--out", out, "--batch-size", "1", "--group-size", "2", "--steps", "1"}
	if code, _, stderr := runCLI(t, append([]string{"rollout"}, small...)...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	before, err := os.ReadFile(filepath.Join(out, "summary.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(`{"id":"a","question":"What is one plus one?","answer":"2"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"two keys", []string{"--group-size", "3", "--seed", "7"},
			[]string{"group_size (--group-size): the run's 2, now 3", "seed (--seed): the run's", "now 7"}},
		{"other tasks", []string{"--tasks", tasks},
			[]string{"tasks (--tasks): the run's \"\", now", "the run's", "the tasks of --tasks", "the run's 200 tasks, now 1 (1 added"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"rollout", "--resume"}, small...), tt.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2:\n%s", code, stderr)
			}
			for _, w := range append(tt.want, "--resume: run", "a new --out") {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "simulated world's tasks") {
				t.Errorf("the sim's tasks follow from the settings; the refusal names them:\n%s", stderr)
			}
			if stdout != "" {
				t.Errorf("a refused resume printed on stdout:\n%s", stdout)
			}
			after, err := os.ReadFile(filepath.Join(out, "summary.jsonl"))
			if err != nil || string(after) != string(before) {
				t.Errorf("the refused resume changed summary.jsonl (%v)", err)
			}
		})
	}
}
