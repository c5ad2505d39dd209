package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestSecondCoordinatorRefused runs two real `mgrpo rollout` on one run:
// the second exits 2 naming the first's host and pid and when its lock
// goes stale; once the first stops renewing (SIGSTOP), a resume is refused
// until its lease has passed and then takes the run over and finishes it;
// the lock of a coordinator killed on this machine is taken over at once;
// a clean exit releases it. With the
// run directory's SQLite store, and with Redis when MGRPO_TEST_REDIS is
// set (the test starts a redis-server of its own).
func TestSecondCoordinatorRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	t.Run("sqlite", func(t *testing.T) { testSecondCoordinator(t, nil) })
	t.Run("redis", func(t *testing.T) {
		if os.Getenv("MGRPO_TEST_REDIS") == "" {
			t.Skip("MGRPO_TEST_REDIS is not set (.ci/run starts a Redis and sets it); this test starts a redis-server of its own")
		}
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skip("no redis-server in PATH")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		startRedisServer(t, port)
		testSecondCoordinator(t, []string{"--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port)})
	})
}

func testSecondCoordinator(t *testing.T, store []string) {
	dir := t.TempDir()
	// Sim servers of the test's own (not --sim: a stopped coordinator
	// would hold the sim's ports).
	sims := startSimServers(t, dir, simllm.DefaultConfig(), 8)
	out := filepath.Join(dir, "out")
	args := func(extra ...string) []string {
		return runArgs(sims, out, 1, append(append([]string{"--run", "locked"}, store...), extra...)...)
	}
	// With --workers 0 and no worker the first coordinator waits for its
	// rollouts for ever: it holds the run until it is killed.
	first := startMgrpo(t, args("--workers", "0", "--lease", "3s")...)
	waitFor(t, first.stderr, "step queued")
	pid := first.cmd.Process.Pid

	second := startMgrpo(t, args("--workers", "-1")...)
	code := second.exitCode(t, time.Minute)
	msg := second.stderr.String()
	if code != 2 || !strings.Contains(msg, fmt.Sprintf("pid %d", pid)) || !strings.Contains(msg, "goes stale in") {
		t.Fatalf("second coordinator: exit %d; want 2 naming pid %d and when its lock goes stale:\n%s", code, pid, msg)
	}
	t.Logf("refused: %s", lastLine(msg))
	host, _ := os.Hostname()
	if !strings.Contains(msg, "host "+host) {
		t.Errorf("second coordinator's message names no host %s:\n%s", host, msg)
	}
	// A coordinator that stops renewing (SIGSTOP: alive, as one on a
	// machine cut off would be) keeps the lock until its lease (3 s) has
	// passed: until then a resume is refused naming it, then it runs.
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	refused := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p := startMgrpo(t, args("--workers", "-1", "--resume")...)
		code := p.exitCode(t, 2*time.Minute)
		if code == 0 {
			break
		}
		if code != 2 || !strings.Contains(p.stderr.String(), fmt.Sprintf("pid %d", pid)) {
			t.Fatalf("resume beside a stopped owner: exit %d; want 2 naming pid %d, or 0:\n%s", code, pid, p.stderr.String())
		}
		if refused++; time.Now().After(deadline) {
			t.Fatalf("the stopped coordinator's lock was not taken over after %d tries:\n%s", refused, p.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the stale lock was taken over after %d refusals", refused)
	if _, err := os.Stat(filepath.Join(out, "step-000001")); err != nil {
		t.Errorf("the run taken over wrote no step 1: %v", err)
	}
	first.cmd.Process.Signal(syscall.SIGKILL)
	first.exitCode(t, 30*time.Second)

	// A coordinator killed on this machine: its lock is taken over at
	// once (its pid is gone), without waiting for its lease.
	killed := startMgrpo(t, args("--workers", "0", "--steps", "2", "--resume")...)
	waitFor(t, killed.stderr, "step queued")
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.exitCode(t, 30*time.Second)
	p := startMgrpo(t, args("--workers", "-1", "--steps", "2", "--resume")...)
	if code := p.exitCode(t, 2*time.Minute); code != 0 || !strings.Contains(p.stderr.String(), "coordinator that is gone") {
		t.Fatalf("resume after the owner was killed: exit %d; want 0, the dead owner's lock taken over:\n%s", code, p.stderr.String())
	}
	// Released on a clean exit: the next coordinator is not refused.
	p = startMgrpo(t, args("--workers", "-1", "--steps", "2", "--resume")...)
	if code := p.exitCode(t, 2*time.Minute); code != 0 {
		t.Errorf("a resume after a clean exit: exit %d; want 0 (the lock released):\n%s", code, p.stderr.String())
	}
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
