package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestRedisQueueLostUnderItsRecord deletes a coordinated run's queue
// stream, or destroys its consumer group, while the run's record stays:
// the coordinator waiting for its rollouts and a worker stop with exit 1
// and a message naming the lost queue and what to do, instead of waiting
// for ever on a queue that looks empty.
func TestRedisQueueLostUnderItsRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim and a redis-server")
	}
	if os.Getenv("MGRPO_TEST_REDIS") == "" {
		t.Skip("MGRPO_TEST_REDIS is not set (.ci/run starts a Redis and sets it); this test starts a redis-server of its own")
	}
	for _, name := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Skipf("no %s in PATH", name)
		}
	}
	for _, tc := range []struct {
		name string
		lose []string // redis-cli arguments
	}{
		{"stream deleted", []string{"DEL", "mgrpo:{q}:queue"}},
		{"group destroyed", []string{"XGROUP", "DESTROY", "mgrpo:{q}:queue", "workers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			startRedisServer(t, port)
			storeURL := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
			dir := t.TempDir()
			sims := startSimServers(t, dir, simllm.DefaultConfig(), 8)
			// No worker yet: the coordinator waits for its queued rollouts.
			coord := startMgrpo(t, runArgs(sims, filepath.Join(dir, "out"), 2, "--run", "q", "--store", storeURL, "--workers", "0")...)
			waitFor(t, coord.stderr, "step queued")
			if out, err := exec.Command("redis-cli", append([]string{"-p", fmt.Sprint(port)}, tc.lose...)...).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1" {
				t.Fatalf("redis-cli %v: %v %s", tc.lose, err, out)
			}
			worker := startMgrpo(t, "worker", "--store", storeURL, "--run", "q", "--lease", "3s")
			for _, p := range []*process{coord, worker} {
				code := p.exitCode(t, time.Minute)
				log := p.stderr.String()
				if code != 1 || !strings.Contains(log, "work queue is gone") || !strings.Contains(log, `"q"`) || !strings.Contains(log, "--rebuild-store") {
					t.Errorf("%v: exit %d; want 1 and a message naming the lost queue and what to do:\n%s", p.cmd.Args[1:3], code, log)
				}
			}
		})
	}
}
