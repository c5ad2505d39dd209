package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// evalFiles returns an eval folder's results.jsonl, summary.json,
// report.md and accuracy.svg without their wall-clock fields (each
// result's latency_seconds, the summary's mean_latency_seconds, the
// report's "Mean tokens / latency" row), which a replay measures anew.
func evalFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	latency := regexp.MustCompile(`"(mean_)?latency_seconds": ?[0-9.e+-]+`)
	out := map[string]string{}
	for _, name := range []string{"results.jsonl", "summary.json", "report.md", "accuracy.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := latency.ReplaceAllString(string(b), `"latency_seconds":0`)
		if name == "report.md" {
			var kept []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.HasPrefix(l, "| Mean tokens / latency |") {
					kept = append(kept, l)
				}
			}
			s = strings.Join(kept, "\n")
		}
		out[name] = s
	}
	return out
}

// TestReplayOfARecordedEval records a sim eval judged by the simulated
// model (--runs 2, --record) and replays it with the sim off: no engine, no
// web, no judge but the recording's answers, and the eval's files come out
// byte-identical apart from their latency fields. After a prompt changes,
// the replay exits 1 naming the first differing request of each item's run
// (item, run, role, turn) with its diff.
func TestReplayOfARecordedEval(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agents against the sim world")
	}
	root := t.TempDir()
	recorded := filepath.Join(root, "recorded")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "eval", "--sim", "--benchmark", "webwalkerqa", "--judge-url", "sim",
		"--seed", "3", "--runs", "2", "--limit", "3", "--record", "--out", recorded)
	if code != 0 {
		t.Fatalf("eval --record: exit %d: %s %s", code, stdout, stderr)
	}
	want := evalFiles(t, recorded)
	if !strings.Contains(want["results.jsonl"], `"judge_output":[`) {
		t.Fatalf("the eval asked no judge:\n%s", want["results.jsonl"])
	}
	replayed := filepath.Join(root, "replayed")
	code, stdout, stderr = runCLI(t, "--log-level", "error", "replay", recorded, "--out", replayed)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "replayed the webwalkerqa eval, 6 runs of its items") {
		t.Errorf("replay said %q", stdout)
	}
	for name, got := range evalFiles(t, replayed) {
		if got != want[name] {
			t.Errorf("%s differs after the replay:\n%s\nwant\n%s", name, got, want[name])
		}
	}
	if b, err := os.ReadFile(filepath.Join(replayed, "replay-misses.jsonl")); err != nil || len(b) != 0 {
		t.Errorf("replay-misses.jsonl: %q, %v; want it empty", b, err)
	}

	cfg := filepath.Join(root, "prompts.yaml")
	if err := os.WriteFile(cfg, []byte("prompts:\n  planner_user: \"Question (be brief): {{.Question}}\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(root, "changed")
	code, stdout, stderr = runCLI(t, "--log-level", "error", "replay", recorded, "--out", changed, "--config", cfg)
	if code != 1 || !strings.Contains(stderr, "the recording does not hold") {
		t.Fatalf("replay with a changed prompt: exit %d, stdout %q, stderr %q: want 1", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "\nnot recorded: item "); n != 6 {
		t.Errorf("%d misses reported, want one per item's run (6):\n%s", n, stdout)
	}
	first, _, _ := strings.Cut(strings.SplitN(stdout, "not recorded: ", 2)[1], "\nnot recorded: ")
	for _, want := range []string{"item ", ", run 0, role planner, turn 0 (eval/", "-       \"content\": \"", "+       \"content\": \"Question (be brief): "} {
		if !strings.Contains(first, want) {
			t.Errorf("first miss reported as\n%s\nwant it to hold %q", first, want)
		}
	}
	lines := readLines(t, filepath.Join(changed, "replay-misses.jsonl"))
	var miss struct {
		Item string `json:"item"`
		Run  int    `json:"run"`
		Role string `json:"role"`
		Turn int    `json:"turn"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &miss); err != nil || miss.Item == "" || miss.Role != "planner" {
		t.Errorf("replay-misses.jsonl's first line %s: %+v, %v", lines[0], miss, err)
	}
	for _, l := range readLines(t, filepath.Join(changed, "results.jsonl")) {
		if !strings.Contains(l, "request not in the recording") {
			t.Errorf("a run of the changed replay did not stop at its miss: %s", l)
		}
	}

	// Questions that changed since the eval are refused, nothing written.
	edited := filepath.Join(root, "edited")
	if err := os.CopyFS(edited, os.DirFS(recorded)); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(edited, "tasks.jsonl")
	b, err := os.ReadFile(tasks)
	if err != nil {
		t.Fatal(err)
	}
	line, rest, _ := strings.Cut(string(b), "\n")
	line = strings.Replace(line, `"question":"`, `"question":"Edited: `, 1)
	if err := os.WriteFile(tasks, []byte(line+"\n"+rest), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out-edited")
	code, _, stderr = runCLI(t, "replay", edited, "--out", out)
	if code != 2 || !strings.Contains(stderr, "changed since the eval") {
		t.Errorf("edited questions: exit %d, stderr %q: want 2 and changed since the eval", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("edited questions: %s written", out)
	}
}

// TestReplayRefusesAnEvalWithoutRecording: an eval run without --record
// exits 2 and writes nothing.
func TestReplayRefusesAnEvalWithoutRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agents against the sim world")
	}
	root := t.TempDir()
	plain := filepath.Join(root, "plain")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "eval", "--sim", "--benchmark", "jsonl", "--limit", "2", "--out", plain)
	if code != 0 {
		t.Fatalf("eval: exit %d: %s %s", code, stdout, stderr)
	}
	out := filepath.Join(root, "out")
	code, _, stderr = runCLI(t, "replay", plain, "--out", out)
	if code != 2 || !strings.Contains(stderr, "holds no recording") {
		t.Errorf("exit %d, stderr %q: want 2 and holds no recording", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written", out)
	}
}
