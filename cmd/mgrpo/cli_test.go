package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/sim"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// goNames are Go spellings that must never reach a user's message.
var goNames = []string{"GroupSize", "BatchSize", "runConfig", "Config.", "struct field"}

// TestCLIExitCodesAndMessages is the table of what a new user meets on the
// command line: each bad input exits 2 with a message naming the flag, key,
// file or line and how to fix it, and leaves nothing on disk.
func TestCLIExitCodesAndMessages(t *testing.T) {
	dir := t.TempDir()
	badType := filepath.Join(dir, "type.yaml")
	os.WriteFile(badType, []byte("steps: 1\ngroup_size: lots\n"), 0o644)
	twoTasks := filepath.Join(dir, "two.jsonl")
	os.WriteFile(twoTasks, []byte(`{"id":"a","question":"q","answer":"x"}`+"\n"+`{"id":"b","question":"q","answer":"y"}`+"\n"), 0o644)
	judgeTimeouts := filepath.Join(dir, "judge.yaml")
	os.WriteFile(judgeTimeouts, []byte("judge:\n  attempt_timeout: 10m\n  call_timeout: 1m\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag", []string{"rollout", "--sim", "--grup-size", "3"}, []string{"grup-size"}},
		{"unparsable value", []string{"rollout", "--sim", "--group-size", "abc"}, []string{"group-size", "abc"}},
		{"unparsable global flag value", []string{"--log-level", "loud", "rollout", "--sim"}, []string{"--log-level", "loud"}},
		{"missing required flag", []string{"tool", "search", "--provider", "serper"}, []string{"query"}},
		{"yaml value of the wrong type", []string{"rollout", "--sim", "--config", badType}, []string{"type.yaml", "line 2", "key group_size", "want an integer"}},
		{"size out of range", []string{"rollout", "--sim", "--group-size", "0"}, []string{"group_size (--group-size): 0", "at least 1"}},
		{"several problems at once", []string{"rollout", "--sim", "--steps", "0", "--batch-size", "-1", "--mode", "triple"},
			[]string{"steps (--steps): 0", "batch_size (--batch-size): -1", `mode (--mode): "triple"`}},
		{"more questions per step than tasks", []string{"rollout", "--sim", "--tasks", twoTasks, "--batch-size", "3"},
			[]string{"batch_size (--batch-size): 3", "2 tasks", "two.jsonl"}},
		{"unknown dialect", []string{"rollout", "--sim", "--dialect", "tgi"}, []string{"planner.dialect (--dialect)", `"tgi"`, "vllm or sglang"}},
		{"zero attempt timeout", []string{"rollout", "--sim", "--attempt-timeout", "0s"},
			[]string{"planner.attempt_timeout (--attempt-timeout): 0s", "executor.attempt_timeout (--attempt-timeout): 0s", "must be positive, or auto"}},
		{"negative call timeout", []string{"rollout", "--sim", "--call-timeout", "-1m"},
			[]string{"planner.call_timeout (--call-timeout): -1m0s", "executor.call_timeout (--call-timeout): -1m0s", "must be positive, or auto"}},
		{"attempt timeout not shorter than the call's", []string{"rollout", "--sim", "--attempt-timeout", "5m", "--call-timeout", "5m"},
			[]string{"planner.attempt_timeout (--attempt-timeout): 5m0s", "must be shorter than planner.call_timeout (--call-timeout) 5m0s"}},
		{"attempt timeout longer than the call's in YAML", []string{"rollout", "--sim", "--config", judgeTimeouts},
			[]string{"judge.attempt_timeout: 10m0s", "must be shorter than judge.call_timeout 1m0s"}},
		{"zero idle timeout", []string{"rollout", "--sim", "--stream", "--idle-timeout", "0s"},
			[]string{"planner.idle_timeout (--idle-timeout): 0s", "executor.idle_timeout (--idle-timeout): 0s", "must be positive, or auto"}},
		{"idle timeout not shorter than the attempt's", []string{"rollout", "--sim", "--stream", "--idle-timeout", "2m", "--attempt-timeout", "1m"},
			[]string{"planner.idle_timeout (--idle-timeout): 2m0s", "must be shorter than planner.attempt_timeout (--attempt-timeout) 1m0s"}},
		{"unparsable timeout", []string{"rollout", "--sim", "--attempt-timeout", "soon"}, []string{"attempt-timeout", `"soon"`, "auto or a duration"}},
		{"zero rollout timeout", []string{"rollout", "--sim", "--rollout-timeout", "0s"}, []string{"budgets.rollout_timeout (--rollout-timeout): 0s", "must be positive"}},
		{"eval with a negative rollout timeout", []string{"eval", "--sim", "--benchmark", "gaia", "--rollout-timeout", "-5m"},
			[]string{"budgets.rollout_timeout (--rollout-timeout): -5m0s"}},
		{"unknown search provider", []string{"rollout", "--tasks", twoTasks, "--batch-size", "1", "--search-provider", "bing",
			"--planner-url", "http://127.0.0.1:1", "--planner-model", "p", "--executor-url", "http://127.0.0.1:1", "--executor-model", "e"},
			[]string{"search.provider (--search-provider)", `"bing"`, "serper, searxng, brave, tavily, retriever or local"}},
		{"negative rollout retries", []string{"rollout", "--sim", "--rollout-retries", "-1"}, []string{"rollout_retries (--rollout-retries): -1", "must not be negative"}},
		{"tool outage fraction above 1", []string{"train", "--sim", "--max-tool-outage-fraction", "1.5"}, []string{"max_tool_outage_fraction (--max-tool-outage-fraction): 1.5", "[0, 1]"}},
		{"negative failed fraction", []string{"rollout", "--sim", "--max-failed-fraction", "-0.1"}, []string{"max_failed_fraction (--max-failed-fraction): -0.1", "[0, 1]"}},
		{"unknown infra policy", []string{"rollout", "--sim", "--on-infra-failure", "drop"}, []string{"on_infra_failure (--on-infra-failure)", `"drop"`, "exclude or zero"}},
		{"sim fault rate above 1", []string{"rollout", "--sim", "--sim-fault-503", "2"}, []string{"sim_faults.rate_503 (--sim-fault-503): 2", "[0, 1]"}},
		{"sim judge without sim", []string{"rollout", "--tasks", twoTasks, "--judge-url", "sim"}, []string{"--judge-url", "needs --sim"}},
		{"eval benchmark that needs a judge", []string{"eval", "--sim", "--benchmark", "webwalkerqa"}, []string{"webwalkerqa", "needs a judge", "--judge-url sim"}},
		{"eval xbench without data", []string{"eval", "--sim", "--benchmark", "xbench", "--judge-url", "sim"}, []string{"--data", "xbench", "encrypted"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "out", string(rune('a'+i)))
			args := append(tt.args, "--out", out)
			if tt.args[0] == "tool" || tt.args[0] == "--log-level" {
				args = tt.args
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			for _, g := range goNames {
				if strings.Contains(stderr, g) {
					t.Errorf("stderr %q names Go's %q", stderr, g)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a configuration error left %s on disk", out)
			}
			_ = stdout
		})
	}
}

// TestCLIHelpShowsRealDefaults checks the help texts a new user reads.
func TestCLIHelpShowsRealDefaults(t *testing.T) {
	tests := []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"rollout", "--help"},
			[]string{"--group-size K", "rollouts per query (K; the paper uses 8) (default: 8)", "queries per step (B) (default: 8)", "number of steps (default: 1)",
				"rollouts in flight across a step (default: 64)", "run seed: rollout seeds, alignment and the sim world derive from it (default: 1)", "serper, searxng, brave, tavily, retriever or local"}, nil},
		{[]string{"sim", "--help"}, []string{"--sites N"}, []string{"--sites mgrpo"}},
		{[]string{"sim", "tasks", "--help"}, []string{"--sites N", "--seed SEED"}, []string{"--seed mgrpo"}},
		{[]string{"tool", "search", "--help"}, []string{"bound on the call (default: 1m0s)"}, []string{"default 60s", "(default: 0s)"}},
	}
	for _, tt := range tests {
		_, stdout, _ := runCLI(t, tt.args...)
		// Help is wrapped to the terminal's width: compare words.
		flat := strings.Join(strings.Fields(stdout), " ")
		for _, w := range tt.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%v: help lacks %q:\n%s", tt.args, w, stdout)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(stdout, n) {
				t.Errorf("%v: help shows %q:\n%s", tt.args, n, stdout)
			}
		}
	}
}

// TestCLIRunLogsAndFiles runs small sim rollouts and checks what a run
// says and writes: the start line with the seed and every size, every line
// through slog (JSON lines with --log-format json, notices hidden by
// --log-level warn), no r_expert notice in single mode, warnings with
// counts, durations with their unit, and the gold answer and the reason of
// every invalid format in rollouts.jsonl.
func TestCLIRunLogsAndFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim world")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "json")
	code, _, stderr := runCLI(t, "--log-format", "json", "rollout", "--sim", "--out", out, "--seed", "9",
		"--steps", "2", "--batch-size", "2", "--group-size", "1", "--dbar", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var start map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a stderr line is not a JSON log record: %q", line)
			continue
		}
		if rec["msg"] == "rollout run" {
			start = rec
		}
	}
	for key, want := range map[string]float64{"seed": 9, "steps": 2, "batch_size": 2, "group_size": 1, "concurrency": 64, "rollouts_per_step": 2} {
		if got, ok := start[key].(float64); !ok || got != want {
			t.Errorf("start line %s = %v, want %v (line %v)", key, start[key], want, start)
		}
	}
	if start["dbar"] != "2" {
		t.Errorf("start line dbar = %v, want 2", start["dbar"])
	}
	if !strings.Contains(stderr, "group_size 1: every group-relative advantage is 0") {
		t.Errorf("no warning about --group-size 1:\n%s", stderr)
	}
	summary := mustRead(t, filepath.Join(out, "summary.jsonl"))
	if !strings.Contains(summary, `"wall_seconds":`) || strings.Contains(summary, `"wall_time"`) {
		t.Errorf("summary.jsonl durations lack their unit:\n%s", summary)
	}
	for _, line := range readLines(t, filepath.Join(out, "step-000001", "rollouts.jsonl")) {
		var rec struct {
			GoldAnswer string `json:"gold_answer"`
			Scores     struct {
				FormatOK     bool   `json:"format_ok"`
				FormatReason string `json:"format_reason"`
				Subs         []struct {
					FormatOK     bool   `json:"format_ok"`
					FormatReason string `json:"format_reason"`
				} `json:"subs"`
			} `json:"scores"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.GoldAnswer == "" {
			t.Errorf("rollouts.jsonl line without gold_answer: %.200s", line)
		}
		if rec.Scores.FormatOK == (rec.Scores.FormatReason != "") {
			t.Errorf("format_ok %v with format_reason %q", rec.Scores.FormatOK, rec.Scores.FormatReason)
		}
		for _, s := range rec.Scores.Subs {
			if s.FormatOK == (s.FormatReason != "") {
				t.Errorf("executor format_ok %v with format_reason %q", s.FormatOK, s.FormatReason)
			}
		}
	}

	code, _, stderr = runCLI(t, "--log-level", "warn", "rollout", "--sim", "--out", filepath.Join(dir, "quiet"), "--batch-size", "1", "--group-size", "2")
	if code != 0 || strings.Contains(stderr, "r_expert") || strings.Contains(stderr, "r_correct") {
		t.Errorf("--log-level warn: exit %d, the scoring notices were printed anyway:\n%s", code, stderr)
	}
	code, _, stderr = runCLI(t, "rollout", "--sim", "--mode", "single", "--out", filepath.Join(dir, "single"), "--batch-size", "1", "--group-size", "2")
	if code != 0 || strings.Contains(stderr, "r_expert") || !strings.Contains(stderr, "r_correct") {
		t.Errorf("--mode single: exit %d; want the r_correct notice and no executor/r_expert notice:\n%s", code, stderr)
	}
}

// TestCLIWarnsWithCounts checks the two warnings that need their own
// setups: questions that wrap around a short task list, and an SSRF guard
// that refuses most visits because the web's host was not allowed.
func TestCLIWarnsWithCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against sim servers")
	}
	dir := t.TempDir()
	// The questions' pages live on the test server, which the SSRF guard
	// refuses (a loopback address) since no --allow-host is given.
	s := startSimServers(t, dir, simllm.DefaultConfig(), 2)
	code, _, stderr := runCLI(t, "rollout", "--tasks", s.tasks, "--out", filepath.Join(dir, "out"),
		"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", s.webURL, "--steps", "2", "--batch-size", "2", "--group-size", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"tasks wrap around", "questions_asked=4", "tasks=2",
		"SSRF guard refused most page visits", "visits_refused=", "--allow-host"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "SSRF guard refused"); n != 1 {
		t.Errorf("the SSRF warning appeared %d times, want once", n)
	}
}

func TestReportCurves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim world")
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "rollout", "--sim", "--out", run, "--steps", "2", "--batch-size", "2", "--group-size", "2"); code != 0 {
		t.Fatalf("rollout: exit %d: %s", code, stderr)
	}
	svg := filepath.Join(dir, "curves.svg")
	if code, _, stderr := runCLI(t, "report", "--out", svg, run); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if data := mustRead(t, svg); !strings.Contains(data, "<svg") || !strings.Contains(data, "run") {
		t.Errorf("report wrote no figure of the run:\n%.300s", data)
	}
	// Without --out the figure goes next to the run, not into the working
	// directory.
	if code, _, stderr := runCLI(t, "report", run); code != 0 {
		t.Fatalf("report without --out: exit %d: %s", code, stderr)
	}
	if data := mustRead(t, filepath.Join(run, "curves.svg")); !strings.Contains(data, "<svg") {
		t.Errorf("report without --out wrote no figure into the run directory:\n%.300s", data)
	}
	code, _, stderr := runCLI(t, "report", "--out", svg, dir)
	if code != 2 || !strings.Contains(stderr, "not a run directory") || !strings.Contains(stderr, dir) {
		t.Errorf("report of a directory without summary.jsonl: exit %d, stderr %q", code, stderr)
	}
}

// TestFirstDayMistakes runs again, as commands, what a new user got wrong
// on their first day (issue 26), and checks each now ends the way it
// should: at once, with exit 2 and a message naming the flag or path, and
// nothing written.
func TestFirstDayMistakes(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "mine")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	small := []string{"--sim", "--batch-size", "1", "--group-size", "2"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"out holds the user's files", append([]string{"rollout", "--out", foreign}, small...), 2, "not a run's (notes.txt)"},
		{"resume a mistyped directory", append([]string{"rollout", "--resume", "--out", filepath.Join(dir, "typo")}, small...), 2, "does not exist"},
		{"resume a directory without a run", append([]string{"rollout", "--resume", "--out", foreign}, small...), 2, "holds no run"},
		{"a train-only flag on rollout", append([]string{"rollout", "--out", filepath.Join(dir, "a"), "--sim-trainer-step-time", "1s"}, small...), 2, "sim-trainer-step-time"},
		{"a global flag after the command", append([]string{"rollout", "--log-level", "warn", "--out", filepath.Join(dir, "b")}, small...), 0, ""},
		{"out holds the user's files, forced", append([]string{"rollout", "--force", "--out", foreign}, small...), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "typo")); err == nil {
		t.Error("a refused --resume created its --out")
	}
	if _, err := os.Stat(filepath.Join(foreign, "step-000001")); err != nil {
		t.Errorf("the forced run wrote no step beside the user's files: %v", err)
	}
}

// TestSimResumeNeedsTheUsualPorts holds one of the sim's ports and checks
// that a --sim --resume says so, instead of reporting another
// configuration (issue 25: the cause was the ports).
func TestSimResumeNeedsTheUsualPorts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, "rollout", "--sim", "--out", out, "--batch-size", "1", "--group-size", "2"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	l, err := net.Listen("tcp", sim.DefaultLLMAddr)
	if err != nil {
		t.Skipf("the sim's port is in use here already: %v", err)
	}
	defer l.Close()
	code, _, stderr := runCLI(t, "rollout", "--sim", "--resume", "--out", out, "--batch-size", "1", "--group-size", "2")
	if code == 0 || !strings.Contains(stderr, "usual ports") || !strings.Contains(stderr, sim.DefaultLLMAddr) {
		t.Errorf("exit %d, stderr %q; want a refusal naming the sim's ports", code, stderr)
	}
}
