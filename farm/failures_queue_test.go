package farm

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// TestQueuedRetriesContinueTheirCount kills a queued run (its local
// worker) in the middle of a rollout's retries and resumes it: the worker
// stored the rollout's retried run as a pending retry as it stopped, and
// the worker of the resumed run continues the count from it (the step
// counts 2 retries, after the two stored causes) instead of starting it
// again from 0.
func TestQueuedRetriesContinueTheirCount(t *testing.T) {
	scripted := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		return scriptedRollout(tk, task, 1+task.K%2, tk.Answer)
	})
	policy := FailurePolicy{RolloutRetries: 2, RetryWait: time.Millisecond, OnInfra: InfraExclude, MaxToolOutageFraction: 0.5, MaxFailedFraction: 0.5}
	tasks := testTasks(2)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "store.db")
	config := func(runner Runner) Config {
		cfg := testFarmConfig(dir, runner)
		cfg.Run, cfg.Store, cfg.Queue, cfg.Concurrency, cfg.Failures = "queued", openSQLite(t, dbPath), true, 2, policy
		cfg.Worker, cfg.Grace = WorkerOptions{Lease: 300 * time.Millisecond}, 5*time.Second
		return cfg
	}
	plan := planStep("queued", 7, 1, 2, 4, tasks, 0, 0)
	flakyID := plan.units[1].ID()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	flaky := &flakyRunner{inner: scripted, fail: map[string]bool{flakyID: true}, cancelAt: flakyID, cancel: cancel}
	cfg := config(flaky)
	f, err := New(cfg, tasks)
	if err != nil {
		t.Fatal(err)
	}
	if sums, err := f.Run(ctx); err == nil || len(sums) != 0 {
		t.Fatalf("interrupted run: %d steps, %v; want none and an error", len(sums), err)
	}
	st := &storeAccess{store: cfg.Store, log: f.log, retries: policy.RolloutRetries}
	have, err := st.digests(context.Background(), "queued", 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := have[flakyID]; !d.pending || !d.Infra || d.Retries != 1 || d.Cause != failure.CauseEngine5xx {
		t.Fatalf("stored digest of %s = %+v; want its retried run stored as a pending retry after 1 retry", flakyID, d)
	}

	counter := &flakyRunner{inner: scripted}
	resumed := config(counter)
	resumed.Resume = true
	sums := mustRunFarm(t, resumed, tasks)
	if n := counter.runs[flakyID]; n != 1 {
		t.Errorf("resumed run ran %s %d times, want once (its retry)", flakyID, n)
	}
	if s := sums[0]; s.RolloutRetries != 2 || s.InfraFailures[failure.CauseEngine5xx] != 2 {
		t.Errorf("resumed step: %d retries, infra %v; want 2 retries after two engine_5xx (1 + the stored 1)", s.RolloutRetries, s.InfraFailures)
	}
	if s := sums[0]; s.ExcludedGroups != 0 || s.InfraRollouts != 0 {
		t.Errorf("resumed step: %d excluded groups, %d infra rollouts; want none", s.ExcludedGroups, s.InfraRollouts)
	}
}

// TestPendingDigest checks that a worker finds the latest pending retry of
// a task, and nothing for a task without one.
func TestPendingDigest(t *testing.T) {
	st := &storeAccess{store: openSQLite(t, filepath.Join(t.TempDir(), "store.db")), log: slog.New(slog.DiscardHandler), retries: 3}
	u := rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q", K: 0, Seed: 5}
	ctx := context.Background()
	if d, err := st.pendingDigest(ctx, u); err != nil || d.Infra {
		t.Fatalf("no pending retry: %+v, %v", d, err)
	}
	for n := range 2 {
		r := RolloutResult{Task: u, Tree: &agents.Rollout{Planner: &agents.Trajectory{Error: "x"}}, Error: "x",
			FailureKind: failure.KindInfra, FailureCause: failure.CauseEngineTimeout, Retries: n}
		if _, err := st.putResult(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := st.pendingDigest(ctx, u); err != nil || !d.Infra || d.Retries != 1 || !d.pending {
		t.Errorf("pending retries 0 and 1 stored: %+v, %v; want retry 1", d, err)
	}
}

// TestRetriesReportPending checks that each infra run about to be retried
// is handed to pending with its retries and causes so far: what a worker
// stores so that a worker killed while it waits leaves the count.
func TestRetriesReportPending(t *testing.T) {
	type seen struct {
		retries int
		causes  []string
	}
	var got []seen
	p := FailurePolicy{RolloutRetries: 2, RetryWait: time.Millisecond}
	run := func(context.Context) RolloutResult {
		return RolloutResult{Tree: &agents.Rollout{}, Error: "x", FailureKind: failure.KindInfra, FailureCause: failure.CauseEngineTimeout}
	}
	bg := context.Background()
	r := executeWithRetries(bg, bg, p, resultDigest{}, nil, slog.New(slog.DiscardHandler), func(r *RolloutResult) {
		got = append(got, seen{r.Retries, slices.Clone(r.RetryCauses)})
	}, run)
	c := failure.CauseEngineTimeout
	want := []seen{{0, nil}, {1, []string{c}}}
	if len(got) != len(want) || got[0].retries != 0 || len(got[0].causes) != 0 || got[1].retries != 1 || !slices.Equal(got[1].causes, want[1].causes) {
		t.Errorf("pending saw %+v, want %+v", got, want)
	}
	if r.Retries != 2 || !slices.Equal(r.RetryCauses, []string{c, c}) {
		t.Errorf("result: %d retries after %v, want 2 after two %s", r.Retries, r.RetryCauses, c)
	}
}

// TestDeadLetterResultIsFinal checks that the failed result a coordinator
// records for a dead-lettered rollout is the rollout's own, never a
// pending retry, though it is infra with retries left: its group is then
// complete, and the step waits for nothing more.
func TestDeadLetterResultIsFinal(t *testing.T) {
	st := &storeAccess{retries: 2}
	u := rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q", K: 0}
	r := RolloutResult{Task: u, FailureKind: failure.KindInfra, FailureCause: failure.CauseSetup}
	if k := st.resultKey(&r); k == u.ID() {
		t.Fatalf("an infra result with retries left has key %q, want a pending retry's", k)
	}
	r.final = true
	if k := st.resultKey(&r); k != u.ID() {
		t.Errorf("a final result has key %q, want %q", k, u.ID())
	}
}
