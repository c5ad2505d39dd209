package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

func TestRolloutSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim world")
	}
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"rollout", "--sim", "--run", "det", "--out", out, "--steps", "2", "--batch-size", "2", "--group-size", "3", "--seed", "9", "--dbar", "2"}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	code, stdout, stderr := runCLI(t, args(a)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "r_expert") {
		t.Errorf("the run did not state what r_expert is:\n%s", stderr)
	}
	for _, step := range []string{"step-000001", "step-000002"} {
		planner := readLines(t, filepath.Join(a, step, "planner.jsonl"))
		if len(planner) < 2*3 {
			t.Errorf("%s: %d planner samples, want at least B·K = 6", step, len(planner))
		}
		if executor := readLines(t, filepath.Join(a, step, "executor.jsonl")); len(executor) != 2*3*2 {
			t.Errorf("%s: %d executor samples, want B·K·d̄ = 12", step, len(executor))
		}
	}
	if got := readLines(t, filepath.Join(a, "summary.jsonl")); len(got) != 2 {
		t.Errorf("summary.jsonl has %d lines, want one per step", len(got))
	}
	if code, _, stderr := runCLI(t, args(b)...); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"planner.jsonl", "executor.jsonl", "stats.jsonl"} {
		x, _ := os.ReadFile(filepath.Join(a, "step-000002", f))
		y, _ := os.ReadFile(filepath.Join(b, "step-000002", f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same seed", f)
		}
	}
	if code, _, stderr := runCLI(t, args(a)...); code != 2 || !strings.Contains(stderr, "already holds step-000001") {
		t.Errorf("rerun into a used out dir: exit %d, stderr %q; want 2 and a refusal", code, stderr)
	}
}

func TestRolloutBadInputStopsBeforeWork(t *testing.T) {
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("steps: 2\ngroup_sise: 8\n"), 0o644)
	badTasks := filepath.Join(dir, "tasks.jsonl")
	os.WriteFile(badTasks, []byte(`{"id":"a","question":"q","answer":"x"}`+"\n"+`{"id":"b","question":`+"\n"), 0o644)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown config key", []string{"rollout", "--sim", "--config", badYAML, "--out", filepath.Join(dir, "o1")}, "group_sise"},
		{"broken task line", []string{"rollout", "--sim", "--tasks", badTasks, "--out", filepath.Join(dir, "o2")}, "tasks.jsonl:2"},
		{"no endpoints", []string{"rollout", "--tasks", badTasks, "--out", filepath.Join(dir, "o3")}, "planner: urls and model required"},
		{"bad mode", []string{"rollout", "--sim", "--mode", "triple", "--out", filepath.Join(dir, "o4")}, "triple"},
		{"bad dbar", []string{"rollout", "--sim", "--dbar", "many", "--out", filepath.Join(dir, "o5")}, "many"},
		{"unknown flag", []string{"rollout", "--sim", "--grup-size", "3"}, "grup-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code == 0 || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want a failure naming %q", code, stderr, tt.wantErr)
			}
			for _, o := range []string{"o1", "o2", "o3", "o4", "o5"} {
				if _, err := os.Stat(filepath.Join(dir, o, "step-000001")); err == nil {
					t.Errorf("%s: a step was written despite the bad input", o)
				}
			}
		})
	}
}

func TestRolloutUnreachableEndpoint(t *testing.T) {
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	os.WriteFile(tasks, []byte(`{"id":"a","question":"q","answer":"x"}`+"\n"), 0o644)
	code, _, stderr := runCLI(t, "rollout", "--tasks", tasks, "--out", filepath.Join(dir, "out"),
		"--planner-url", "http://127.0.0.1:1", "--planner-model", "p", "--executor-url", "http://127.0.0.1:1", "--executor-model", "e",
		"--search-provider", "searxng", "--search-url", "http://127.0.0.1:1", "--batch-size", "1")
	if code == 0 || !strings.Contains(stderr, "unreachable") || !strings.Contains(stderr, "before starting") {
		t.Errorf("exit %d, stderr %q; want an unreachable-endpoint error before any rollout", code, stderr)
	}
}

func TestRolloutHelpListsEveryConfigKey(t *testing.T) {
	_, stdout, _ := runCLI(t, "rollout", "--help")
	// A key of the endpoint roles is listed once, as ROLE.key (see
	// TestHelpLayout).
	for _, key := range []string{"group_size", "ROLE.urls [pejr]", "ROLE.temperature [pejr]", "search.allow_hosts", "rewards.beta3", "budgets.rollout_timeout", "prompts", "ROLE.api_key_env [pejr]"} {
		if !strings.Contains(stdout, key) {
			t.Errorf("--help does not document %q", key)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// TestRolloutAgainstServers runs the farm the way a user does against their
// own servers: separate inference and search endpoints given by flags.
func TestRolloutAgainstServers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against sim servers")
	}
	cfg := simllm.DefaultConfig()
	cfg.Dialect = simllm.DialectSGLang
	dir := t.TempDir()
	s := startSimServers(t, dir, cfg, 3)
	for _, mode := range []string{"mgrpo", "frozen-sub", "single"} {
		out := filepath.Join(dir, mode)
		code, stdout, stderr := runCLI(t, "rollout", "--tasks", s.tasks, "--out", out, "--mode", mode,
			"--planner-url", s.llmURL+"/v1", "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
			"--dialect", "sglang", "--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
			"--batch-size", "3", "--group-size", "2", "--dbar", "2", "--format", "parquet")
		if code != 0 {
			t.Fatalf("mode %s: exit %d\nstdout %s\nstderr %s", mode, code, stdout, stderr)
		}
		step := filepath.Join(out, "step-000001")
		if got := len(readLines(t, filepath.Join(step, "planner.jsonl"))); got < 6 {
			t.Errorf("mode %s: %d planner samples, want at least 6", mode, got)
		}
		_, err := os.Stat(filepath.Join(step, "executor.jsonl"))
		executor := err == nil && strings.TrimSpace(mustRead(t, filepath.Join(step, "executor.jsonl"))) != ""
		if want := mode == "mgrpo"; executor != want {
			t.Errorf("mode %s: executor samples present = %v, want %v", mode, executor, want)
		}
		if _, err := os.Stat(filepath.Join(step, "planner.parquet")); err != nil {
			t.Errorf("mode %s: --format parquet wrote no planner.parquet: %v", mode, err)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRolloutSimJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim world")
	}
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, "rollout", "--sim", "--judge-url", "sim", "--out", out, "--batch-size", "2", "--group-size", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, `r_expert="the expert judge's rating`) {
		t.Errorf("the run did not say r_expert comes from the judge:\n%s", stderr)
	}
	if rollouts := mustRead(t, filepath.Join(out, "step-000001", "rollouts.jsonl")); !strings.Contains(rollouts, `Score: `) {
		t.Errorf("rollouts.jsonl keeps no raw expert judge output")
	}
	if code, _, stderr := runCLI(t, "rollout", "--judge-url", "sim", "--tasks", "x.jsonl", "--out", out+"2"); code != 2 || !strings.Contains(stderr, "needs --sim") {
		t.Errorf("--judge-url sim without --sim: exit %d, stderr %q", code, stderr)
	}
}

// TestRolloutSurvivesStalledServer is the run of the stall report: 2% of
// model requests are accepted and never answered. A 64-rollout step (8
// queries × 8) completes with every group whole and no rollout lost or
// failed, within a bound that follows from the timeouts the run sets: each
// stalled attempt is abandoned after --attempt-timeout and retried, so no
// rollout reaches --rollout-timeout. Without attempt timeouts a stalled
// call would wait for --call-timeout and fail its rollout.
func TestRolloutSurvivesStalledServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 64-rollout step against a stalling sim")
	}
	const attemptTimeout = 2 * time.Second
	runStalledStep(t, simllm.Faults{RateStall: 0.02}, attemptTimeout, "stall",
		"--attempt-timeout", attemptTimeout.String(), "--call-timeout", (30 * time.Second).String())
}

// TestRolloutSurvivesStalledServerStreamed is the stall report's run with
// streaming on: 2% of model requests are never answered and 2% of streams
// stop after their first events. Attempts may run for 5 minutes, but
// every stalled one, before or mid-stream, is ended after --idle-timeout
// (1s) of silence and retried at once, so the step ends within the same
// bound as unstreamed: no rollout reaches --rollout-timeout. Without the
// idle timeout each stall would hold its call for the 5-minute attempt
// timeout, past the rollout timeout.
func TestRolloutSurvivesStalledServerStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 64-rollout step against a stalling sim")
	}
	const idleTimeout = time.Second
	stderr := runStalledStep(t, simllm.Faults{RateStall: 0.02, RateStallStream: 0.02}, idleTimeout, "stall_stream",
		"--stream", "--idle-timeout", idleTimeout.String(), "--attempt-timeout", "5m", "--call-timeout", "16m")
	if !strings.Contains(stderr, "streaming chat completions with token ids") {
		t.Errorf("the run did not say it streams:\n%s", stderr)
	}
}

// runStalledStep runs a 64-rollout step against a sim injecting faults,
// with the run's timeouts in args and a rollout timeout of 150s, and checks
// that it completes whole within 150s + 30s. ended is how long a stalled
// attempt lasts; kind is the fault counter that must show stalls. It
// returns the run's stderr.
func runStalledStep(t *testing.T, faults simllm.Faults, ended time.Duration, kind string, args ...string) string {
	t.Helper()
	const (
		B, K           = 8, 8
		rolloutTimeout = 150 * time.Second
		// The step's bound: every rollout ends before the rollout timeout,
		// then the step is scored and written (no judge: exact match).
		bound = rolloutTimeout + 30*time.Second
	)
	cfg := simllm.DefaultConfig()
	cfg.Seed = 21
	cfg.Faults = faults
	dir := t.TempDir()
	s := startSimServers(t, dir, cfg, B)
	out := filepath.Join(dir, "run")
	start := time.Now()
	code, stdout, stderr := runCLI(t, append([]string{"rollout", "--tasks", s.tasks, "--out", out,
		"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
		"--batch-size", strconv.Itoa(B), "--group-size", strconv.Itoa(K), "--concurrency", strconv.Itoa(B * K),
		"--rollout-timeout", rolloutTimeout.String()}, args...)...)
	wall := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if wall >= bound {
		t.Errorf("the step took %v, want less than %v (rollout timeout %v + 30s to score and write)", wall, bound, rolloutTimeout)
	}
	var sum struct {
		Rollouts       int `json:"rollouts"`
		FailedRollouts int `json:"failed_rollouts"`
		LLMCalls       int `json:"llm_calls"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, filepath.Join(out, "summary.jsonl"))), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Rollouts != B*K || sum.FailedRollouts != 0 {
		t.Errorf("summary: %d rollouts, %d failed; want %d and none", sum.Rollouts, sum.FailedRollouts, B*K)
	}
	step := filepath.Join(out, "step-000001")
	if got := len(readLines(t, filepath.Join(step, "rollouts.jsonl"))); got != B*K {
		t.Errorf("rollouts.jsonl has %d rollouts, want %d", got, B*K)
	}
	stats := readLines(t, filepath.Join(step, "stats.jsonl"))
	if len(stats) != B {
		t.Errorf("stats.jsonl has %d queries, want %d", len(stats), B)
	}
	for _, line := range stats {
		var st struct {
			QueryID     string    `json:"query_id"`
			MainRewards []float64 `json:"main_rewards"`
		}
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.MainRewards) != K {
			t.Errorf("query %s: a group of %d rollouts, want %d", st.QueryID, len(st.MainRewards), K)
		}
	}
	stalls := simCounter(t, s.llmURL, `sim:injected_faults_total{kind="`+kind+`",model_name="sim-qwen3"}`)
	if stalls == 0 {
		t.Fatalf("the sim injected no %s fault in %d calls; the test shows nothing", kind, sum.LLMCalls)
	}
	t.Logf("%d rollouts, %d model calls, %v %s faults, each attempt ended after %v; step %v (bound %v)",
		sum.Rollouts, sum.LLMCalls, stalls, kind, ended, wall.Round(time.Millisecond), bound)
	return stderr
}

// simCounter reads one sample of a sim server's /metrics.
func simCounter(t *testing.T, base, sample string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("the sim's /metrics has no %s:\n%s", sample, body)
	return 0
}
