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

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRunStopsOnAnUnusableRedis: a Redis that runs out of memory in the
// middle of a run (maxmemory 1, noeviction), a replica (READONLY) and an
// ACL user without the store's keys (NOPERM) stop `mgrpo rollout` with
// exit 1 and a message saying the store is unusable and how to continue,
// instead of retrying for ever. Skipped without MGRPO_TEST_REDIS, and for
// a case whose server refuses CONFIG or ACL.
func TestRunStopsOnAnUnusableRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim and redis-servers")
	}
	if os.Getenv("MGRPO_TEST_REDIS") == "" {
		t.Skip("MGRPO_TEST_REDIS is not set (.ci/run starts a Redis and sets it); this test starts redis-servers of its own")
	}
	for _, name := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Skipf("no %s in PATH", name)
		}
	}
	cli := func(t *testing.T, port int, args ...string) error {
		out, err := exec.Command("redis-cli", append([]string{"-p", fmt.Sprint(port)}, args...)...).CombinedOutput()
		if err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "OK") {
			err = fmt.Errorf("%s", out)
		}
		return err
	}
	cfg := simllm.DefaultConfig()
	cfg.TTFT = 40 * time.Millisecond
	for _, tc := range []struct {
		name  string
		reply string
		// setup prepares the server on port and returns the store URL; mid
		// breaks it once the run has started (nil: broken from the start).
		setup func(t *testing.T, port int) string
		mid   func(t *testing.T, port int)
	}{
		{"OOM", "command not allowed when used memory", func(t *testing.T, port int) string {
			return fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		}, func(t *testing.T, port int) {
			for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
				if err := cli(t, port, "CONFIG", "SET", kv[0], kv[1]); err != nil {
					t.Skipf("the server refuses CONFIG SET: %v", err)
				}
			}
		}},
		{"READONLY", "replica", func(t *testing.T, port int) string {
			replica := freePort(t)
			startRedisServer(t, replica, "--replicaof", "127.0.0.1", fmt.Sprint(port))
			return fmt.Sprintf("redis://127.0.0.1:%d/0", replica)
		}, nil},
		{"NOPERM", "permissions", func(t *testing.T, port int) string {
			if err := cli(t, port, "ACL", "SETUSER", "limited", "on", ">pw-limited", "~other:*", "+@all"); err != nil {
				t.Skipf("the server refuses ACL SETUSER: %v", err)
			}
			return fmt.Sprintf("redis://limited:pw-limited@127.0.0.1:%d/0", port)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			startRedisServer(t, port)
			url := tc.setup(t, port)
			dir := t.TempDir()
			sims := startSimServers(t, dir, cfg, 8)
			p := startMgrpo(t, runArgs(sims, filepath.Join(dir, "out"), 3, "--run", "oom", "--store", url)...)
			if tc.mid != nil {
				waitFor(t, p.stderr, `msg="step start"`)
				tc.mid(t, port)
			}
			code := p.exitCode(t, 40*time.Second)
			log := p.stderr.String()
			if code != 1 || !strings.Contains(log, "store unusable") || !strings.Contains(log, tc.reply) || !strings.Contains(log, "--resume") {
				t.Errorf("exit %d; want 1 and a message that the store is unusable (Redis's %q) and how to continue:\n%s", code, tc.reply, log)
			}
			if strings.Contains(log, "pw-limited") {
				t.Error("the log holds the password")
			}
		})
	}
}
