package farm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// flakyRunner fails the first run of each rollout in fail with an infra
// failure; the rollout in cancelAt fails its retry too and cancels the
// run as it does, standing in for a process killed in the middle of a
// rollout's retries. The others run with the inner runner.
type flakyRunner struct {
	inner    Runner
	fail     map[string]bool
	cancelAt string
	cancel   context.CancelFunc
	mu       sync.Mutex
	runs     map[string]int
}

func (r *flakyRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	id := task.ID()
	r.mu.Lock()
	if r.runs == nil {
		r.runs = map[string]int{}
	}
	r.runs[id]++
	n := r.runs[id]
	r.mu.Unlock()
	if r.fail[id] && (n == 1 || id == r.cancelAt) {
		if n > 1 {
			r.cancel()
		}
		return &agents.Rollout{Question: t.Question, Planner: &agents.Trajectory{Role: agents.RolePlanner, Task: t.Question,
			Error: "turn 0: llm call to http://gpu-1:8000 gave up after 6 attempt(s), last status 503", FailureKind: failure.KindInfra,
			FailureCause: failure.CauseEngine5xx, FailureEndpoint: "http://gpu-1:8000"}}
	}
	return r.inner.Run(ctx, task, t)
}

// TestResumeRetriesStoredInfraFailures kills a run (cancels it) in the
// middle of a rollout's retries and resumes it from its store: the
// rollout stored as an infra failure with retries left is run again, never
// kept as a zero; the rollout whose retry succeeded before the kill is
// kept; and the step files equal those of a run that never failed.
func TestResumeRetriesStoredInfraFailures(t *testing.T) {
	sr := newStoreRun(t)
	policy := FailurePolicy{RolloutRetries: 2, RetryWait: time.Millisecond, OnInfra: InfraExclude, StopWhenUseless: true, MaxFailedFraction: 0.5}
	mem := t.TempDir()
	clean := sr.config(t, mem, sr.runner(t))
	clean.Failures = policy
	mustRunFarm(t, clean, sr.tasks)

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "store.db")
	ctx, cancel := context.WithCancel(context.Background())
	plan := planStep("stored", 21, 1, 3, 4, sr.tasks, 0, 0)
	first, second := plan.units[0].ID(), plan.units[1].ID()
	flaky := &flakyRunner{inner: sr.runner(t), fail: map[string]bool{first: true, second: true}, cancelAt: second, cancel: cancel}
	cfg := sr.config(t, dir, flaky)
	cfg.Store, cfg.Concurrency, cfg.Failures = openSQLite(t, dbPath), 1, policy
	f, err := New(cfg, sr.tasks)
	if err != nil {
		t.Fatal(err)
	}
	if sums, err := f.Run(ctx); err == nil || len(sums) != 0 {
		t.Fatalf("interrupted run: %d steps, %v; want none and an error", len(sums), err)
	}
	if _, err := os.Stat(rollout.StepDir(dir, 1)); err == nil {
		t.Fatal("an interrupted step was written")
	}
	have, err := (&storeAccess{store: cfg.Store, log: slog.New(slog.DiscardHandler)}).digests(context.Background(), "stored", 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := have[second]; !d.Infra || d.Retries != 1 || d.Cause != failure.CauseEngine5xx {
		t.Fatalf("stored digest of %s = %+v; want an infra failure after 1 retry", second, d)
	}
	if d := have[first]; d.Infra || d.Retries != 1 {
		t.Fatalf("stored digest of %s = %+v; want a success after 1 retry", first, d)
	}

	counter := &flakyRunner{inner: sr.runner(t)}
	resumed := sr.config(t, dir, counter)
	resumed.Store, resumed.Resume, resumed.Failures = openSQLite(t, dbPath), true, policy
	sums := mustRunFarm(t, resumed, sr.tasks)
	if counter.runs[second] != 1 || counter.runs[first] != 0 {
		t.Errorf("resumed run ran %s %d times and %s %d times; want the stored infra failure retried once and the success kept",
			second, counter.runs[second], first, counter.runs[first])
	}
	sameStepFiles(t, mem, dir, 2)
	if s := sums[0]; s.ExcludedGroups != 0 || s.InfraRollouts != 0 || s.RolloutRetries != 3 || s.InfraFailures[failure.CauseEngine5xx] != 3 {
		t.Errorf("resumed step 1: %d excluded, %d still infra, %d retries, infra %v; want 0, 0, 3 (1 + 2), 3 engine_5xx",
			s.ExcludedGroups, s.InfraRollouts, s.RolloutRetries, s.InfraFailures)
	}
}
