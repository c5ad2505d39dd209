package farm

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store/redis"
)

// redisServer is a redis-server this test starts, kills and restarts, with
// its data in an append-only file so a restart finds it again.
type redisServer struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
}

func startRedisServer(t *testing.T) *redisServer {
	t.Helper()
	if os.Getenv("MGRPO_TEST_REDIS") == "" {
		t.Skip("MGRPO_TEST_REDIS is not set (.ci/run installs redis-server and sets it)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("MGRPO_TEST_REDIS is set but redis-server is not on PATH: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &redisServer{t: t, dir: t.TempDir(), port: port}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server did not listen on %d: %v", r.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

// outageRunner kills Redis once after n rollouts have started and brings
// it back after the outage, while rollouts go on.
type outageRunner struct {
	inner   Runner
	n       int32
	started atomic.Int32
	outage  func()
}

func (o *outageRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	if o.started.Add(1) == o.n {
		go o.outage()
	}
	return o.inner.Run(ctx, task, t)
}

// TestRedisLostMidStep kills the Redis store in the middle of a step and
// restarts it: the farm and its workers retry with backoff and wait, and
// the run ends with the samples of an in-memory run, nothing lost.
func TestRedisLostMidStep(t *testing.T) {
	sr := newStoreRun(t)
	rs := startRedisServer(t)
	mem := t.TempDir()
	mustRunFarm(t, sr.config(t, mem, sr.runner(t)), sr.tasks)

	st, err := redis.Open(context.Background(), rs.url())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var restarted atomic.Bool
	runner := &outageRunner{inner: sr.runner(t), n: 6, outage: func() {
		rs.kill()
		time.Sleep(1500 * time.Millisecond)
		rs.start()
		restarted.Store(true)
	}}
	dir := t.TempDir()
	cfg := sr.config(t, dir, runner)
	cfg.Store, cfg.Queue = st, true
	cfg.Worker = WorkerOptions{Name: "local", Lease: 10 * time.Second}
	mustRunFarm(t, cfg, sr.tasks)
	if !restarted.Load() {
		t.Fatal("Redis was never restarted: the outage did not happen during the run")
	}
	sameStepFiles(t, mem, dir, 2)
	if _, err := os.Stat(filepath.Join(rs.dir, "appendonlydir")); err != nil {
		t.Logf("no append-only directory (older redis-server writes appendonly.aof): %v", err)
	}
}
