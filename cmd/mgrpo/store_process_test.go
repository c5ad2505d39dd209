package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// mgrpoBinary builds the command once per test binary, for the tests that
// kill it with SIGKILL.
func mgrpoBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mgrpo-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "mgrpo")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// process is a started mgrpo command with its stderr captured.
type process struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan error
}

func startMgrpo(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(mgrpoBinary(t), args...), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &bytes.Buffer{}, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process to exit and fails the test unless it exited 0.
func (p *process) wait(t *testing.T, within time.Duration) {
	t.Helper()
	if code := p.exitCode(t, within); code != 0 {
		t.Fatalf("%v: exit %d\n%s", p.cmd.Args, code, p.stderr.String())
	}
}

// exitCode waits for the process to exit and returns its exit status.
func (p *process) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("%v still running after %v:\n%s", p.cmd.Args, within, p.stderr.String())
	}
	return -1
}

// runArgs are the arguments of a run of B=4 queries × K=4 against s.
func runArgs(s simServers, out string, steps int, extra ...string) []string {
	args := []string{"--log-level", "info", "rollout", "--run", "crash", "--seed", "17", "--tasks", s.tasks, "--out", out,
		"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
		"--batch-size", "4", "--group-size", "4", "--steps", fmt.Sprint(steps), "--concurrency", "4"}
	return append(args, extra...)
}

// sameRunFiles fails unless every step file of the steps is byte-identical
// in both runs, and each step holds B·K planner samples (none lost, none
// twice).
func sameRunFiles(t *testing.T, want, got string, steps, rollouts int) {
	t.Helper()
	for s := 1; s <= steps; s++ {
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			a, err := os.ReadFile(filepath.Join(rollout.StepDir(want, s), name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(rollout.StepDir(got, s), name))
			if err != nil {
				t.Fatalf("step %d: %v", s, err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("step %d %s differs from the uninterrupted run's (%d vs %d bytes)", s, name, len(b), len(a))
			}
		}
		planner, err := rollout.ReadSamplesJSONL(filepath.Join(rollout.StepDir(got, s), rollout.PlannerFile))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, smp := range planner {
			key := fmt.Sprintf("%s/%d", smp.QueryID, smp.Rollout)
			if seen[key] {
				t.Errorf("step %d: rollout %s appears twice", s, key)
			}
			seen[key] = true
		}
		if len(seen) != rollouts {
			t.Errorf("step %d: %d distinct rollouts, want %d", s, len(seen), rollouts)
		}
	}
}

// referenceRun starts a sim whose calls take 40 ms (slow enough to kill a
// run mid-step) and runs steps of it uninterrupted in one process; it
// returns the test directory, the sim and the run's output directory.
func referenceRun(t *testing.T, steps int) (dir string, s simServers, out string) {
	t.Helper()
	cfg := simllm.DefaultConfig()
	cfg.TTFT = 40 * time.Millisecond
	dir = t.TempDir()
	s = startSimServers(t, dir, cfg, 8)
	out = filepath.Join(dir, "reference")
	startMgrpo(t, runArgs(s, out, steps)...).wait(t, 3*time.Minute)
	return dir, s, out
}

// waitForResults waits until the run's SQLite store holds a result of step.
func waitForResults(t *testing.T, path, run string, step int) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := st.CountResults(context.Background(), run, step)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result of step %d in %s after a minute", step, path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCrashAndResume kills `mgrpo rollout` with SIGKILL in the middle of
// its second step, resumes it, and compares the result with an
// uninterrupted run of the same seed.
func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	const steps = 3
	dir, s, whole := referenceRun(t, steps)

	out := filepath.Join(dir, "crashed")
	p := startMgrpo(t, runArgs(s, out, steps)...)
	// Killed once step 2 has finished rollouts in the store, not before.
	waitFor(t, p.stderr, `msg="step start" step=2`)
	waitForResults(t, filepath.Join(out, "store.db"), "crash", 2)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.done <- nil
	if _, err := os.Stat(rollout.StepDir(out, 1)); err != nil {
		t.Fatalf("step 1 was not written before the kill: %v\n%s", err, p.stderr.String())
	}
	if _, err := os.Stat(rollout.StepDir(out, steps)); err == nil {
		t.Fatal("the run finished before it was killed; the test needs a slower sim")
	}
	// What a kill in the middle of writing leaves behind.
	if err := os.Mkdir(filepath.Join(out, ".step-000002.tmp-killed"), 0o755); err != nil {
		t.Fatal(err)
	}

	again := startMgrpo(t, runArgs(s, out, steps)...)
	if code := again.exitCode(t, time.Minute); code != 2 || !strings.Contains(again.stderr.String(), "--resume") {
		t.Errorf("a run refused for its existing steps exits %d and does not point at --resume:\n%s", code, again.stderr.String())
	}
	resumed := startMgrpo(t, runArgs(s, out, steps, "--resume")...)
	resumed.wait(t, 3*time.Minute)
	log := resumed.stderr.String()
	if !strings.Contains(log, "step already written: skipped") || !strings.Contains(log, "step=1") {
		t.Errorf("the resumed run did not skip step 1:\n%s", log)
	}
	if !strings.Contains(log, "step resumed: rollouts already done are kept") {
		t.Errorf("the resumed run redid step 2's finished rollouts:\n%s", log)
	}
	sameRunFiles(t, whole, out, steps, 16)
	if m, _ := filepath.Glob(filepath.Join(out, ".step-*")); len(m) != 0 {
		t.Errorf("leftover temporary step directories after resume: %v", m)
	}
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil || len(sums) != steps {
		t.Errorf("summary.jsonl: %d lines, %v; want %d", len(sums), err, steps)
	}
}

// testRedisStore returns a store URL on the test Redis under a key prefix
// of its own (name and the time), or skips the test without one.
func testRedisStore(t *testing.T, name string) string {
	t.Helper()
	redisURL := os.Getenv("MGRPO_TEST_REDIS")
	if redisURL == "" {
		t.Skip("MGRPO_TEST_REDIS is not set (.ci/run starts a Redis and sets it)")
	}
	sep := "?"
	if strings.Contains(redisURL, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%sprefix=%s-%d:", redisURL, sep, name, time.Now().UnixNano())
}

// TestWorkersOnRedis runs a coordinator and three workers on one Redis and
// kills one worker with SIGKILL while it holds rollouts; the run completes
// with every rollout once (B·K a step) and the samples of a single-process
// run.
func TestWorkersOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	storeURL := testRedisStore(t, "workers")
	const steps = 2
	dir, s, single := referenceRun(t, steps)

	out := filepath.Join(dir, "coordinated")
	coord := startMgrpo(t, runArgs(s, out, steps, "--store", storeURL, "--workers", "0")...)
	waitFor(t, coord.stderr, "step queued")
	worker := func(name string) *process {
		return startMgrpo(t, "worker", "--store", storeURL, "--name", name, "--concurrency", "2", "--lease", "2s")
	}
	// Three workers; one is killed while it holds rollouts, and the other
	// two redo them once its leases expire.
	doomed := worker("doomed")
	workers := []*process{worker("w1"), worker("w2")}
	waitFor(t, doomed.stderr, "worker serving")
	// Let it take rollouts, then kill it holding them.
	time.Sleep(300 * time.Millisecond)
	if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-doomed.done
	doomed.done <- nil
	coord.wait(t, 3*time.Minute)
	for _, w := range workers {
		w.cmd.Process.Signal(syscall.SIGINT)
	}
	for _, w := range workers {
		if code := w.exitCode(t, time.Minute); code != 0 && code != exitInterrupted {
			t.Errorf("worker exit %d:\n%s", code, w.stderr.String())
		}
	}
	sameRunFiles(t, single, out, steps, 16)
}

// TestUnreachableStoreStopsBeforeWork: a store that cannot be reached stops
// the run before any rollout, naming the store without its password.
func TestUnreachableStoreStopsBeforeWork(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	t.Setenv("MGRPO_STORE_PASSWORD", "from-the-environment")
	for _, storeURL := range []string{"redis://worker:hunter2@127.0.0.1:1/0", "redis://127.0.0.1:1/0"} {
		code, _, stderr := runCLI(t, "rollout", "--sim", "--out", out, "--store", storeURL, "--steps", "1", "--batch-size", "2", "--group-size", "2")
		if code == 0 || !strings.Contains(stderr, "127.0.0.1:1") {
			t.Errorf("--store %s: exit %d, stderr %q; want a failure naming the store", storeURL, code, stderr)
		}
		if strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "from-the-environment") {
			t.Errorf("the store's password leaked: %q", stderr)
		}
		if m, _ := filepath.Glob(filepath.Join(out, "step-*")); len(m) != 0 {
			t.Errorf("steps written although the store was unreachable: %v", m)
		}
	}
	code, _, stderr := runCLI(t, "rollout", "--sim", "--out", out, "--store", "mysql://x", "--steps", "1")
	if code != 2 || !strings.Contains(stderr, "store") || !strings.Contains(stderr, "mysql") {
		t.Errorf("--store mysql://x: exit %d, %q; want 2 and a message naming the key and the scheme", code, stderr)
	}
	code, _, stderr = runCLI(t, "rollout", "--sim", "--out", out, "--store", "none", "--resume", "--steps", "1")
	if code != 2 || !strings.Contains(stderr, "--resume") {
		t.Errorf("--store none --resume: exit %d, %q; want 2 and a message about --resume", code, stderr)
	}
}
