package farm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// storeRun is one sim run of the store tests: 2 steps of 3 queries × 4.
type storeRun struct {
	llmURL, webURL string
	tasks          []Task
}

func newStoreRun(t *testing.T) storeRun {
	if testing.Short() {
		t.Skip("plays whole rollouts against the sim world")
	}
	cfg := simllm.DefaultConfig()
	cfg.Seed = 9
	llmURL, webURL := startSimServers(t, cfg)
	return storeRun{llmURL: llmURL, webURL: webURL, tasks: simTasks(t, 4)}
}

func (s storeRun) config(t *testing.T, dir string, runner Runner) Config {
	return Config{Run: "stored", Seed: 21, Steps: 2, BatchSize: 3, GroupSize: 4, Mode: rollout.ModeMGRPO,
		DBar: rollout.DBarSpec{Auto: true}, Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{},
		Concurrency: 5, Runner: runner, Sink: rollout.DirSink{Dir: dir}, Grace: 10 * time.Millisecond}
}

func (s storeRun) runner(t *testing.T) Runner {
	return newSimRunner(t, s.llmURL, s.webURL, simRunnerConfig{mode: rollout.ModeMGRPO})
}

func openSQLite(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// sameStepFiles fails unless every step file of want's steps is
// byte-identical in got.
func sameStepFiles(t *testing.T, want, got string, steps int) {
	t.Helper()
	for s := 1; s <= steps; s++ {
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			a := mustReadFile(t, filepath.Join(rollout.StepDir(want, s), name))
			b := mustReadFile(t, filepath.Join(rollout.StepDir(got, s), name))
			if !bytes.Equal(a, b) {
				t.Errorf("step %d %s differs from the in-memory run's (%d vs %d bytes): %s", s, name, len(b), len(a), firstDifference(a, b))
			}
		}
	}
}

func TestStoredResultsMatchMemory(t *testing.T) {
	sr := newStoreRun(t)
	mem := t.TempDir()
	mustRunFarm(t, sr.config(t, mem, sr.runner(t)), sr.tasks)

	dir := t.TempDir()
	st := openSQLite(t, filepath.Join(dir, "store.db"))
	cfg := sr.config(t, dir, sr.runner(t))
	cfg.Store, cfg.RunConfig = st, []byte(`{"note":"test"}`)
	sums := mustRunFarm(t, cfg, sr.tasks)
	sameStepFiles(t, mem, dir, 2)

	c := context.Background()
	recs, err := st.Steps(c, "stored")
	if err != nil || len(recs) != 2 {
		t.Fatalf("step records %v, %v; want 2", recs, err)
	}
	for i, rec := range recs {
		if rec.Status != store.StepWritten || len(rec.ObservedD) != 12 || rec.Summary == nil || rec.Summary.DBar != sums[i].DBar || rec.Files != mustAbs(t, rollout.StepDir(dir, i+1)) {
			t.Errorf("step record %d = %+v; want written with 12 d_k, its summary and files", i+1, rec)
		}
		stats, err := st.StepStats(c, "stored", i+1)
		want, _ := rollout.ReadStatsJSONL(filepath.Join(rollout.StepDir(dir, i+1), rollout.StatsFile))
		if err != nil || len(stats) != len(want) || stats[0].QueryID != want[0].QueryID || stats[0].DBar != want[0].DBar {
			t.Errorf("stored stats of step %d = %d, %v; want those of stats.jsonl (%d)", i+1, len(stats), err, len(want))
		}
		if n, _ := st.CountResults(c, "stored", i+1); n != 0 {
			t.Errorf("step %d keeps %d results after it was written", i+1, n)
		}
	}
	rec, err := st.Run(c, "stored")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ReadRunSpec(rec)
	if err != nil || len(spec.Tasks) != len(sr.tasks) || string(spec.Config) != `{"note":"test"}` {
		t.Errorf("run spec %+v, %v; want the config and the tasks", spec, err)
	}

	// The same run again without --resume is refused and changes nothing.
	again := sr.config(t, t.TempDir(), sr.runner(t))
	again.Store, again.RunConfig = st, cfg.RunConfig
	f, err := New(again, sr.tasks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Run(c); !errors.Is(err, ErrRunExists) {
		t.Errorf("a second run on the store: %v, want ErrRunExists", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cancellingRunner cancels the run once after rollout n of step has
// started, standing in for a process killed mid-step, and counts the
// rollouts it ran.
type cancellingRunner struct {
	inner  Runner
	step   int
	n      int32
	cancel context.CancelFunc
	ran    atomic.Int32
	seen   atomic.Int32
}

func (r *cancellingRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	r.ran.Add(1)
	if task.Step == r.step && r.seen.Add(1) == r.n {
		r.cancel()
	}
	return r.inner.Run(ctx, task, t)
}

func TestResumeRedoesOnlyWhatIsMissing(t *testing.T) {
	sr := newStoreRun(t)
	mem := t.TempDir()
	mustRunFarm(t, sr.config(t, mem, sr.runner(t)), sr.tasks)

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "store.db")
	ctx, cancel := context.WithCancel(context.Background())
	killer := &cancellingRunner{inner: sr.runner(t), step: 2, n: 7, cancel: cancel}
	cfg := sr.config(t, dir, killer)
	cfg.Store = openSQLite(t, dbPath)
	f, err := New(cfg, sr.tasks)
	if err != nil {
		t.Fatal(err)
	}
	if sums, err := f.Run(ctx); err == nil || len(sums) != 1 {
		t.Fatalf("interrupted run: %d steps, %v; want step 1 and an error", len(sums), err)
	}
	if _, err := os.Stat(rollout.StepDir(dir, 2)); err == nil {
		t.Fatal("an interrupted step was written")
	}
	stored, _ := cfg.Store.CountResults(context.Background(), "stored", 2)
	if stored == 0 || stored >= 12 {
		t.Fatalf("%d results of step 2 stored before the interruption; want some but not all", stored)
	}
	// A killed writer's leftover must go.
	leftover := filepath.Join(dir, ".step-000002.tmp-123")
	if err := os.Mkdir(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := rollout.RemoveTempSteps(dir); err != nil {
		t.Fatal(err)
	}

	counter := &cancellingRunner{inner: sr.runner(t), step: -1, cancel: func() {}}
	resumed := sr.config(t, dir, counter)
	resumed.Store, resumed.Resume = openSQLite(t, dbPath), true
	sums := mustRunFarm(t, resumed, sr.tasks)
	if len(sums) != 2 || sums[0].Step != 1 {
		t.Fatalf("resumed run returned %d summaries", len(sums))
	}
	if got, want := int(counter.ran.Load()), 24-12-stored; got != want {
		t.Errorf("the resumed run ran %d rollouts; want %d (step 2's %d missing ones and none of step 1)", got, want, 12-stored)
	}
	sameStepFiles(t, mem, dir, 2)
	summaries, err := rollout.ReadSummaries(filepath.Join(dir, rollout.SummaryFile))
	if err != nil || len(summaries) != 2 {
		t.Errorf("summary.jsonl holds %d summaries, %v; want 2", len(summaries), err)
	}
}

// dyingRunner blocks every rollout until its context ends: a worker that
// hangs, or was killed, holding its leases.
type dyingRunner struct{ claimed atomic.Int32 }

func (r *dyingRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	r.claimed.Add(1)
	<-ctx.Done()
	return &agents.Rollout{Question: t.Question, Planner: &agents.Trajectory{Role: agents.RolePlanner, Error: "killed"}}
}

func TestQueueWithWorkersMatchesMemory(t *testing.T) {
	sr := newStoreRun(t)
	mem := t.TempDir()
	mustRunFarm(t, sr.config(t, mem, sr.runner(t)), sr.tasks)

	dir := t.TempDir()
	st := openSQLite(t, filepath.Join(dir, "store.db"))
	cfg := sr.config(t, dir, nil)
	cfg.Store, cfg.Queue, cfg.Concurrency = st, true, 0

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	serve := func(wc Config, name string, lease time.Duration) {
		w, err := NewWorker(wc, sr.tasks, WorkerOptions{Name: name, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Serve(ctx); err != nil {
				t.Errorf("worker %s: %v", name, err)
			}
		}()
	}
	f, err := New(cfg, sr.tasks)
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() {
		_, err := f.Run(context.Background())
		runErr <- err
	}()
	// One worker takes two rollouts and dies with them: its leases expire
	// and the others redo them.
	dying := &dyingRunner{}
	dyingCfg := sr.config(t, dir, dying)
	dyingCfg.Store, dyingCfg.Concurrency = st, 2
	dctx, kill := context.WithCancel(ctx)
	dw, err := NewWorker(dyingCfg, sr.tasks, WorkerOptions{Name: "dying", Lease: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go dw.Serve(dctx)
	for dying.claimed.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	kill()
	for i, name := range []string{"w1", "w2"} {
		wc := sr.config(t, dir, sr.runner(t))
		wc.Store, wc.Concurrency = st, 2+i
		serve(wc, name, 3*time.Second) // long enough for a loaded machine: their leases never lapse
	}
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	stop()
	wg.Wait()
	sameStepFiles(t, mem, dir, 2)
	counts, err := st.Counts(context.Background(), "stored")
	if err != nil || counts.Done != 24 || counts.Pending+counts.Leased+counts.Dead != 0 {
		t.Errorf("queue counts %+v, %v; want 24 done and nothing else", counts, err)
	}
}

func TestReadRunSpecRefusesOtherVersions(t *testing.T) {
	rec := store.RunRecord{ID: "r", Version: store.RunRecordVersion + 1, Config: []byte(`{"config":{},"tasks":[{"id":"q"}]}`)}
	if _, err := ReadRunSpec(rec); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("a record of version %d: %v, want an error naming the version", rec.Version, err)
	}
	rec.Version = store.RunRecordVersion
	if spec, err := ReadRunSpec(rec); err != nil || len(spec.Tasks) != 1 {
		t.Errorf("a record of this version: %+v, %v", spec, err)
	}
	rec.Config = []byte(`{"config":{},"tasks":[]}`)
	if _, err := ReadRunSpec(rec); err == nil {
		t.Error("a record without tasks was accepted")
	}
}
