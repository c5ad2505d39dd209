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
)

// startRedisServer starts a redis-server of the test's own on port,
// without persistence and with extra arguments, and returns it.
func startRedisServer(t *testing.T, port int, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("redis-server", append([]string{"--port", fmt.Sprint(port), "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d not reachable: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedisLostTheRun kills a Redis without persistence in the middle of a
// coordinated run and starts it again empty: the coordinator and its two
// workers stop with exit 1 and a message naming the lost run and what to
// do, instead of waiting forever for results that are gone.
func TestRedisLostTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim and a redis-server")
	}
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
	redis := startRedisServer(t, port)
	storeURL := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	out := filepath.Join(t.TempDir(), "out")
	coord := startMgrpo(t, "--log-level", "info", "rollout", "--sim", "--steps", "3", "--seed", "5", "--batch-size", "8", "--group-size", "8",
		"--run", "chaos", "--store", storeURL, "--workers", "0", "--out", out)
	waitFor(t, coord.stderr, "step queued")
	workers := []*process{
		startMgrpo(t, "worker", "--store", storeURL, "--name", "w1", "--lease", "5s"),
		startMgrpo(t, "worker", "--store", storeURL, "--name", "w2", "--lease", "5s"),
	}
	waitFor(t, coord.stderr, `msg="step queued" step=2`)
	if err := redis.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	startRedisServer(t, port)
	for _, p := range append([]*process{coord}, workers...) {
		code := p.exitCode(t, 30*time.Second)
		log := p.stderr.String()
		if code != 1 || !strings.Contains(log, "the store lost the run") || !strings.Contains(log, `"chaos"`) || !strings.Contains(log, "--resume") {
			t.Errorf("%v: exit %d; want 1 and a message naming the lost run and what to do:\n%s", p.cmd.Args[1:4], code, log)
		}
	}
}
