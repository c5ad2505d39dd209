package farm

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store/redis"
)

// killChildEnv names the run directory of TestKilledCoordinatorChild, the
// coordinator process TestHardKillKeepsRetryCounts kills, and
// killStoreEnv its store's URL ("": SQLite in the run directory).
const (
	killChildEnv = "MGRPO_TEST_KILL_CHILD_DIR"
	killStoreEnv = "MGRPO_TEST_KILL_CHILD_STORE"
)

// killRollout is the rollout of the kill test that always fails on the
// infra side.
const killRollout = "test/1/q0/0"

// brokenRunner fails killRollout with an infra failure on every run and
// runs the others as scripted; on the run numbered blockAt (from 1) of
// killRollout it creates marker and blocks, standing in for a coordinator
// in the middle of a rollout's retry when its machine dies.
type brokenRunner struct {
	blockAt int
	marker  string
	mu      sync.Mutex
	runs    int
}

func (r *brokenRunner) Run(_ context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	if task.ID() != killRollout {
		return scriptedRollout(t, task, 2, t.Answer)
	}
	r.mu.Lock()
	r.runs++
	n := r.runs
	r.mu.Unlock()
	if n == r.blockAt {
		if err := os.WriteFile(r.marker, nil, 0o644); err != nil {
			panic(err)
		}
		select {} // killed here
	}
	return &agents.Rollout{Question: t.Question, Planner: &agents.Trajectory{Role: agents.RolePlanner, Task: t.Question,
		Error: "turn 0: llm call to http://gpu-1:8000 gave up after 6 attempt(s), last status 503", FailureKind: failure.KindInfra,
		FailureCause: failure.CauseEngine5xx, FailureEndpoint: "http://gpu-1:8000"}}
}

// killConfig is the configuration of both processes of the kill test.
func killConfig(t *testing.T, dir, storeURL string, runner Runner, resume bool) Config {
	cfg := testFarmConfig(dir, runner)
	if storeURL == "" {
		cfg.Store = openSQLite(t, filepath.Join(dir, "store.db"))
	} else {
		st, err := redis.Open(context.Background(), storeURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		cfg.Store = st
	}
	cfg.Resume = resume
	cfg.Failures = FailurePolicy{RolloutRetries: 2, RetryWait: time.Millisecond, OnInfra: InfraExclude, MaxToolOutageFraction: 0.5, MaxFailedFraction: 0.5}
	return cfg
}

// TestKilledCoordinatorChild is the coordinator TestHardKillKeepsRetryCounts
// starts and kills; it does nothing run on its own.
func TestKilledCoordinatorChild(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("the child process of TestHardKillKeepsRetryCounts")
	}
	cfg := killConfig(t, dir, os.Getenv(killStoreEnv), &brokenRunner{blockAt: 2, marker: filepath.Join(dir, "blocked")}, false)
	f, err := New(cfg, testTasks(2))
	if err != nil {
		t.Fatal(err)
	}
	f.Run(context.Background())
	t.Fatal("the run ended: it should have been killed")
}

// TestHardKillKeepsRetryCounts kills (SIGKILL) an in-process coordinator
// in the middle of a rollout's first retry, after one infra run, and
// resumes the run from its store (SQLite; Redis when MGRPO_TEST_REDIS is
// set): the resumed run continues the rollout's count (its first infra
// run is in the store as a pending retry), so the rollout runs
// --rollout-retries + 1 times in all, not once more per process.
func TestHardKillKeepsRetryCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Run("sqlite", func(t *testing.T) { testHardKill(t, "") })
	t.Run("redis", func(t *testing.T) {
		base := os.Getenv("MGRPO_TEST_REDIS")
		if base == "" {
			t.Skip("MGRPO_TEST_REDIS is not set (.ci/run starts redis-server and sets it)")
		}
		u, err := url.Parse(base)
		if err != nil {
			t.Fatalf("MGRPO_TEST_REDIS: %v", err)
		}
		q := u.Query()
		q.Set("prefix", fmt.Sprintf("mgrpo-killtest-%d-%d:", os.Getpid(), time.Now().UnixNano()))
		u.RawQuery = q.Encode()
		testHardKill(t, u.String())
	})
}

func testHardKill(t *testing.T, storeURL string) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledCoordinatorChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir, killStoreEnv+"="+storeURL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "blocked")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child coordinator never reached the rollout's retry")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	counter := &brokenRunner{}
	sums := mustRunFarm(t, killConfig(t, dir, storeURL, counter, true), testTasks(2))
	// One infra run before the kill; the retry the kill cut never
	// finished. The resumed run makes the two retries left.
	if counter.runs != 2 {
		t.Errorf("the resumed run ran %s %d times; want 2 (its retries 1 and 2: the first run's count survived the kill)", killRollout, counter.runs)
	}
	s := sums[0]
	if s.ExcludedGroups != 1 || s.InfraRollouts != 1 || s.RolloutRetries != 2 || s.InfraFailures[failure.CauseEngine5xx] != 3 {
		t.Errorf("resumed step: %d excluded, %d still infra, %d retries, infra %v; want 1, 1, 2, 3 engine_5xx",
			s.ExcludedGroups, s.InfraRollouts, s.RolloutRetries, s.InfraFailures)
	}
}
