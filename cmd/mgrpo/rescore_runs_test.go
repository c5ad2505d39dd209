package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
)

// sameStepFilesAs fails unless dir holds the step files of want, byte for
// byte; what names the command that wrote dir.
func sameStepFilesAs(t *testing.T, what, want, dir string) {
	t.Helper()
	w, got := stepFiles(t, want), stepFiles(t, dir)
	if len(got) != len(w) {
		t.Errorf("%s: %d step files, want %d", what, len(got), len(w))
	}
	for name, b := range w {
		if string(got[name]) != string(b) {
			t.Errorf("%s: %s differs from the recorded run's", what, name)
		}
	}
}

// rescoreAndReplay rescores (unchanged settings) and replays the recorded
// run from, extra naming its store for the rescore; both must write its
// step files byte for byte.
func rescoreAndReplay(t *testing.T, from string, replay bool, extra ...string) {
	t.Helper()
	root := t.TempDir()
	args := append([]string{"--log-level", "error", "rescore", from, "--out", filepath.Join(root, "rescored")}, extra...)
	if code, stdout, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("rescore: exit %d: %s %s", code, stdout, stderr)
	}
	sameStepFilesAs(t, "rescore", from, filepath.Join(root, "rescored"))
	if !replay {
		return
	}
	if code, stdout, stderr := runCLI(t, "--log-level", "error", "replay", from, "--out", filepath.Join(root, "replayed")); code != 0 {
		t.Fatalf("replay: exit %d: %s %s", code, stdout, stderr)
	}
	sameStepFilesAs(t, "replay", from, filepath.Join(root, "replayed"))
}

// TestRescoreReadsARedisRun rescores a run kept in Redis: without --store
// it is refused (exit 2) with a message naming --store; with the run's
// store URL its step files come out byte-identical. Skipped without
// MGRPO_TEST_REDIS.
func TestRescoreReadsARedisRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim")
	}
	storeURL := testRedisStore(t, "rescore")
	from := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := runCLI(t, "--log-level", "error", "rollout", "--sim", "--seed", "5", "--steps", "2", "--batch-size", "3",
		"--group-size", "4", "--store", storeURL, "--out", from); code != 0 {
		t.Fatalf("rollout: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(from, "store.db")); err == nil {
		t.Fatal("a run kept in Redis wrote store.db")
	}
	to := filepath.Join(t.TempDir(), "new")
	code, _, stderr := runCLI(t, "--log-level", "error", "rescore", from, "--out", to)
	if code != 2 || !strings.Contains(stderr, "--store") {
		t.Errorf("rescore without --store: exit %d, stderr %q; want 2 naming --store", code, stderr)
	}
	if _, err := os.Stat(to); err == nil {
		t.Errorf("a refused rescore wrote %s", to)
	}
	rescoreAndReplay(t, from, false, "--store", storeURL)
}

// TestRescoreAndReplayAWorkersRun records a run whose rollouts were all
// run by two `mgrpo worker` processes (a coordinator with --workers 0 on
// the run's SQLite store): rescore and replay write its step files byte
// for byte.
func TestRescoreAndReplayAWorkersRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	from := filepath.Join(t.TempDir(), "run")
	storeURL := "sqlite://" + filepath.ToSlash(filepath.Join(from, "store.db"))
	coord := startMgrpo(t, "--log-level", "info", "rollout", "--sim", "--record", "--seed", "5", "--steps", "2", "--batch-size", "3",
		"--group-size", "4", "--workers", "0", "--out", from)
	waitFor(t, coord.stderr, "step queued")
	for _, name := range []string{"w1", "w2"} {
		w := startMgrpo(t, "worker", "--store", storeURL, "--name", name, "--concurrency", "2")
		t.Cleanup(func() { w.cmd.Process.Signal(syscall.SIGINT) })
	}
	coord.wait(t, 3*time.Minute)
	rescoreAndReplay(t, from, true)
}

// TestRescoreAndReplayAResumedRun records a run, kills it (SIGKILL) after
// its first step and resumes it: rescore and replay write the resumed
// run's step files byte for byte.
func TestRescoreAndReplayAResumedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	from := filepath.Join(t.TempDir(), "run")
	args := []string{"rollout", "--sim", "--record", "--seed", "5", "--steps", "3", "--batch-size", "8", "--group-size", "4", "--out", from}
	first := startMgrpo(t, append([]string{"--log-level", "info"}, args...)...)
	waitFor(t, first.stderr, `msg="step done" step=1`)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	first.done <- nil
	sums, _ := rollout.ReadSummaries(filepath.Join(from, rollout.SummaryFile))
	if len(sums) >= 3 {
		t.Fatalf("the run finished before it was killed (%d steps): nothing to resume", len(sums))
	}
	if code, _, stderr := runCLI(t, append(append([]string{"--log-level", "error"}, args...), "--resume")...); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	rescoreAndReplay(t, from, true)
}
