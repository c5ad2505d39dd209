package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// timingKeys are the summary line's keys that measure the run's timing,
// or count what the order of concurrent rollouts decided — which of two
// calls of a tool with the same arguments fetched and which found the
// tool cache — none of which a replay reproduces.
var timingKeys = []string{"wall_seconds", "rollout_seconds", "scoring_seconds", "assemble_seconds", "write_seconds",
	"rollouts_per_second", "completion_tokens_per_second", "tool_cache", "tool_cache_by_tool"}

// usageTimingKeys are the usage's keys the tool cache's order decided.
var usageTimingKeys = []string{"search_requests", "visit_requests"}

// summaryLines returns dir's summary.jsonl lines without their timing
// keys, each re-encoded (keys sorted).
func summaryLines(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(mustRead(t, filepath.Join(dir, rollout.SummaryFile))), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, k := range timingKeys {
			delete(m, k)
		}
		if u, ok := m["usage"].(map[string]any); ok {
			for _, k := range usageTimingKeys {
				delete(u, k)
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// sameRunAs fails unless dir holds want's step files byte for byte and its
// summary lines but for their timings.
func sameRunAs(t *testing.T, what, want, dir string) {
	t.Helper()
	sameStepFilesAs(t, what, want, dir)
	w, got := summaryLines(t, want), summaryLines(t, dir)
	if len(got) != len(w) {
		t.Fatalf("%s: %d summary lines, want %d", what, len(got), len(w))
	}
	for i := range w {
		if got[i] != w[i] {
			t.Errorf("%s: summary line %d is\n%s\nwant (the recorded run's, timings aside)\n%s", what, i+1, got[i], w[i])
		}
	}
}

// TestReplayOfAsynchronousAndStreamedRuns records fixed-seed `train --sim`
// runs whose steps followed their timing — asynchronous (--max-staleness
// 1, rollouts continued or restarted at a weight update) and streamed
// (--stream-groups, groups of equal rewards discarded) — and replays each
// with the sim off: each replayed step runs the rollouts the recorded one
// took at the versions they were sampled with, so every step file comes
// out byte-identical and the summary lines too but for their timings.
// After a prompt change the replay exits 1 naming the first differing
// request.
func TestReplayOfAsynchronousAndStreamedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm and the sim trainer")
	}
	base := []string{"train", "--sim", "--mode", "mgrpo", "--seed", "3", "--steps", "3", "--batch-size", "3", "--group-size", "4", "--record"}
	runs := []struct {
		name  string
		extra []string
	}{
		{"continue", []string{"--max-staleness", "1", "--concurrency", "2"}},
		{"restart", []string{"--max-staleness", "1", "--concurrency", "2", "--partial-rollouts", "restart"}},
		{"streamed", []string{"--max-staleness", "1", "--stream-groups", "--drop-zero-variance", "--concurrency", "3"}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			root := t.TempDir()
			recorded := runOnUsualPorts(t, root, "recorded", func(out string) error {
				args := append(append(append([]string{"--log-level", "error"}, base...), r.extra...), "--run", "demo", "--out", out)
				if code, _, stderr := runCLI(t, args...); code != 0 {
					t.Fatalf("train: exit %d: %s", code, stderr)
				}
				return nil
			})
			sums, err := rollout.ReadSummaries(filepath.Join(recorded, rollout.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sums {
				t.Logf("recorded step %d: versions %d/%d, turns by version %v, restarted %d, draws %v, discarded %v",
					s.Step, s.PolicyVersion, s.ExecutorPolicyVersion, s.TurnsByVersion, s.RestartedRollouts, s.Draws, s.DiscardedGroups)
			}
			if r.name == "streamed" && len(sums[0].Draws) == 0 {
				t.Fatal("the streamed run's summary names no draws")
			}
			replayed := filepath.Join(root, "replayed")
			code, stdout, stderr := runCLI(t, "--log-level", "error", "replay", recorded, "--out", replayed)
			if code != 0 {
				t.Fatalf("replay: exit %d: %s %s", code, stdout, stderr)
			}
			sameRunAs(t, "replay", recorded, replayed)

			cfg := filepath.Join(root, "prompts.yaml")
			if err := os.WriteFile(cfg, []byte("prompts:\n  executor_user: \"Subtask (be brief): {{.Task}}\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr = runCLI(t, "--log-level", "error", "replay", recorded, "--out", filepath.Join(root, "changed"), "--config", cfg)
			if code != 1 || !strings.Contains(stderr, "the recording does not hold") {
				t.Fatalf("replay with a changed prompt: exit %d, stderr %q: want 1", code, stderr)
			}
			first, _, _ := strings.Cut(strings.SplitN(stdout, "not recorded: ", 2)[1], "\nnot recorded: ")
			for _, want := range []string{"step ", ", query ", ", rollout ", "role executor, turn 0", "-       \"content\": \"", "+       \"content\": \"Subtask (be brief): "} {
				if !strings.Contains(first, want) {
					t.Errorf("first miss reported as\n%s\nwant it to hold %q", first, want)
				}
			}
		})
	}
}

// TestReplayReadsARedisRun replays a recorded run kept in Redis whose
// rollouts two `mgrpo worker` processes ran: without --store it is
// refused (exit 2) naming --store; with the run's store URL (read, never
// written) its step files come out byte-identical and its summary lines
// but for their timings. Skipped without MGRPO_TEST_REDIS.
func TestReplayReadsARedisRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	storeURL := testRedisStore(t, "replay")
	from := filepath.Join(t.TempDir(), "run")
	coord := startMgrpo(t, "--log-level", "info", "rollout", "--sim", "--record", "--seed", "5", "--steps", "2", "--batch-size", "3",
		"--group-size", "4", "--workers", "0", "--store", storeURL, "--out", from)
	waitFor(t, coord.stderr, "step queued")
	for _, name := range []string{"w1", "w2"} {
		w := startMgrpo(t, "worker", "--store", storeURL, "--name", name, "--concurrency", "2")
		t.Cleanup(func() { w.cmd.Process.Signal(syscall.SIGINT) })
	}
	coord.wait(t, 3*time.Minute)
	if _, err := os.Stat(filepath.Join(from, "store.db")); err == nil {
		t.Fatal("a run kept in Redis wrote store.db")
	}
	root := t.TempDir()
	refused := filepath.Join(root, "refused")
	code, _, stderr := runCLI(t, "--log-level", "error", "replay", from, "--out", refused)
	if code != 2 || !strings.Contains(stderr, "--store") {
		t.Errorf("replay without --store: exit %d, stderr %q; want 2 naming --store", code, stderr)
	}
	if _, err := os.Stat(refused); err == nil {
		t.Errorf("a refused replay wrote %s", refused)
	}
	replayed := filepath.Join(root, "replayed")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "replay", from, "--out", replayed, "--store", storeURL)
	if code != 0 {
		t.Fatalf("replay --store: exit %d: %s %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "model calls answered from the recording") {
		t.Errorf("replay printed %q", stdout)
	}
	sameRunAs(t, "replay --store", from, replayed)
}

// TestReplayOfADecoupledRun records the planner side of a decoupled run
// (train --role planner, the executor side another process, both on one
// Redis): the replay, given the run's store, runs each step at the
// executor versions the other side had published and writes the planner
// side's step files byte for byte, its summary lines but for their
// timings. Skipped without MGRPO_TEST_REDIS.
func TestReplayOfADecoupledRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and trains against the sim")
	}
	storeURL := testRedisStore(t, "replay-decoupled")
	_, trainerURL := referenceTrainer(t)
	cfg := simllm.DefaultConfig()
	cfg.Dialect = simllm.DialectSGLang
	dir := t.TempDir()
	sim := startSimServers(t, dir, cfg, 4)
	out := filepath.Join(dir, "out")
	const steps = 3
	planner := startMgrpo(t, "train", "--tasks", sim.tasks, "--dialect", "sglang", "--out", out, "--run", "decoupled", "--steps", strconv.Itoa(steps),
		"--planner-url", sim.llmURL, "--planner-model", "sim-qwen3", "--executor-url", sim.llmURL, "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", sim.webURL, "--allow-host", sim.webHost,
		"--batch-size", "2", "--group-size", "2", "--concurrency", "4", "--role", "planner", "--store", storeURL,
		"--planner-trainer", trainerURL, "--base-model-planner", "sim-base", "--weight-sync", "sglang", "--record")
	waitFor(t, planner.stderr, "msg=\"step start\" step=1")
	executor := startMgrpo(t, "train", "--role", "executor", "--store", storeURL, "--steps", strconv.Itoa(steps),
		"--executor-trainer", trainerURL, "--base-model-executor", "sim-base", "--weight-sync", "sglang")
	planner.wait(t, 3*time.Minute)
	executor.wait(t, time.Minute)
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil || len(sums) != steps {
		t.Fatalf("summary.jsonl: %d steps, %v", len(sums), err)
	}
	if sums[steps-1].ExecutorPolicyVersion == 0 {
		t.Errorf("the last step sampled the executors at version 0: the executor side trained nothing")
	}
	replayed := filepath.Join(t.TempDir(), "replayed")
	code, stdout, stderr := runCLI(t, "--log-level", "error", "replay", out, "--out", replayed, "--store", storeURL)
	if code != 0 {
		t.Fatalf("replay --store: exit %d: %s %s", code, stdout, stderr)
	}
	sameRunAs(t, "replay of the planner side", out, replayed)
}
