package farm

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// timeline records when each step's rollouts started and its training
// began and ended.
type timeline struct {
	mu          sync.Mutex
	firstRun    map[int]time.Time
	trainStart  map[int]time.Time
	trainEnd    map[int]time.Time
	trainedKeys map[string]int
}

func newTimeline() *timeline {
	return &timeline{firstRun: map[int]time.Time{}, trainStart: map[int]time.Time{}, trainEnd: map[int]time.Time{}, trainedKeys: map[string]int{}}
}

// cancelWhen polls cond under tl's lock and cancels once it holds: the
// interruption of the resume tests, at a point of the run's timeline.
func cancelWhen(tl *timeline, cancel context.CancelFunc, cond func() bool) {
	for {
		tl.mu.Lock()
		ok := cond()
		tl.mu.Unlock()
		if ok {
			cancel()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// slowTrainer takes delay per step, as a GPU step would, and answers
// version = its previous + 1.
type slowTrainer struct {
	tl      *timeline
	delay   time.Duration
	version int64
}

func (s *slowTrainer) Start(context.Context) error { return nil }
func (s *slowTrainer) Close() error                { return nil }
func (s *slowTrainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	s.tl.mu.Lock()
	s.tl.trainStart[b.Step] = time.Now()
	s.tl.trainedKeys[b.IdempotencyKey()]++
	s.tl.mu.Unlock()
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return trainerbridge.StepResult{}, ctx.Err()
	}
	s.version = b.PolicyVersion + 1
	s.tl.mu.Lock()
	s.tl.trainEnd[b.Step] = time.Now()
	s.tl.mu.Unlock()
	return trainerbridge.StepResult{Version: s.version}, nil
}

// timedRunner notes when each step's first rollout started.
type timedRunner struct {
	inner Runner
	tl    *timeline
}

func (r *timedRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	r.tl.mu.Lock()
	if _, ok := r.tl.firstRun[task.Step]; !ok {
		r.tl.firstRun[task.Step] = time.Now()
	}
	r.tl.mu.Unlock()
	return r.inner.Run(ctx, task, t)
}

func TestAsyncTrainingBoundsStaleness(t *testing.T) {
	sr := newStoreRun(t)
	for _, staleness := range []int{0, 1, 2} {
		tl := newTimeline()
		dir := t.TempDir()
		cfg := sr.config(t, dir, &timedRunner{inner: sr.runner(t), tl: tl})
		cfg.Steps = 5
		cfg.Store = openSQLite(t, filepath.Join(dir, "store.db"))
		delay := 400 * time.Millisecond
		cfg.Training = &Training{MaxStaleness: staleness, Trainers: map[rollout.Role]trainerbridge.Trainer{
			rollout.RolePlanner:  &slowTrainer{tl: tl, delay: delay},
			rollout.RoleExecutor: &slowTrainer{tl: tl, delay: delay},
		}}
		sums := mustRunFarm(t, cfg, sr.tasks)
		if len(sums) != 5 {
			t.Fatalf("S=%d: %d summaries", staleness, len(sums))
		}
		overlapped := false
		for _, sum := range sums {
			s := sum.Step
			for role, rec := range sum.Training {
				if rec.Staleness < 0 || rec.Staleness > int64(staleness) {
					t.Errorf("S=%d step %d %s: staleness %d outside [0, %d]", staleness, s, role, rec.Staleness, staleness)
				}
				if rec.SampledVersion < int64(s-1-staleness) || rec.SampledVersion > int64(s-1) {
					t.Errorf("S=%d step %d %s: sampled at version %d, want within [%d, %d]", staleness, s, role, rec.SampledVersion, s-1-staleness, s-1)
				}
			}
			// The admission rule: step s starts after step s-1-S trained.
			if before := s - 1 - staleness; before >= 1 && tl.firstRun[s].Before(tl.trainEnd[before]) {
				t.Errorf("S=%d: step %d started before step %d was trained", staleness, s, before)
			}
			if s > 1 && tl.firstRun[s].Before(tl.trainEnd[s-1]) {
				overlapped = true
			}
			planner, _, _ := mustReadStep(t, dir, s)
			for _, smp := range planner {
				if smp.PolicyVersion != sum.PolicyVersion {
					t.Fatalf("S=%d step %d: a sample of version %d in a step sampled at %d", staleness, s, smp.PolicyVersion, sum.PolicyVersion)
				}
			}
		}
		if overlapped != (staleness > 0) {
			t.Errorf("S=%d: rollouts overlapped training: %v", staleness, overlapped)
		}
		for key, n := range tl.trainedKeys {
			if n != 1 {
				t.Errorf("S=%d: batch %s trained %d times", staleness, key, n)
			}
		}
		if len(tl.trainedKeys) != 10 {
			t.Errorf("S=%d: %d batches trained, want 10", staleness, len(tl.trainedKeys))
		}
	}
}

// TestAsyncTrainingResumes interrupts an asynchronous run while a step
// trains and later steps sample, and resumes it: every step is trained
// once and the files are those of an uninterrupted run.
func TestAsyncTrainingResumes(t *testing.T) {
	sr := newStoreRun(t)
	run := func(dir string, ctx context.Context, tl *timeline, resume bool) ([]rollout.StepSummary, error) {
		cfg := sr.config(t, dir, &timedRunner{inner: sr.runner(t), tl: tl})
		cfg.Steps, cfg.Resume = 4, resume
		cfg.Store = openSQLite(t, filepath.Join(dir, "store.db"))
		cfg.Training = &Training{MaxStaleness: 1, Trainers: map[rollout.Role]trainerbridge.Trainer{
			rollout.RolePlanner: &slowTrainer{tl: tl, delay: 300 * time.Millisecond},
		}}
		f, err := New(cfg, sr.tasks)
		if err != nil {
			t.Fatal(err)
		}
		return f.Run(ctx)
	}
	whole := t.TempDir()
	if _, err := run(whole, context.Background(), newTimeline(), false); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tl := newTimeline()
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once step 2 trains (step 3's rollouts run beside it).
	go cancelWhen(tl, cancel, func() bool { _, ok := tl.trainStart[2]; return ok })
	if _, err := run(dir, ctx, tl, false); err == nil {
		t.Fatal("the interrupted run reported no error")
	}
	again := newTimeline()
	sums, err := run(dir, context.Background(), again, true)
	if err != nil || len(sums) != 4 {
		t.Fatalf("resumed: %d steps, %v", len(sums), err)
	}
	sameStepFiles(t, whole, dir, 4)
	for key, n := range again.trainedKeys {
		if tl.trainedKeys[key] > 0 && tl.trainEnd[stepOfKey(key)] != (time.Time{}) {
			t.Errorf("batch %s trained before the interruption was trained again (%d)", key, n)
		}
	}
	trained := map[string]bool{}
	for k := range tl.trainedKeys {
		if tl.trainEnd[stepOfKey(k)] != (time.Time{}) {
			trained[k] = true
		}
	}
	for k := range again.trainedKeys {
		trained[k] = true
	}
	if len(trained) != 4 {
		t.Errorf("%d steps trained over both runs, want 4: %v / %v", len(trained), tl.trainedKeys, again.trainedKeys)
	}
}

// stepOfKey returns the step of an idempotency key "run/role/step-NNNNNN".
func stepOfKey(key string) int {
	var n int
	for i := len(key) - 6; i < len(key); i++ {
		n = n*10 + int(key[i]-'0')
	}
	return n
}

// TestAsyncTrainingResumesWithRestarts interrupts an asynchronous run
// whose rollouts restart at every update, and resumes it: every step is
// trained exactly once over the two runs, and each written step holds all
// its rollouts (a restarted rollout's files depend on when the update came,
// so the files are not compared with an uninterrupted run's).
func TestAsyncTrainingResumesWithRestarts(t *testing.T) {
	sr := newStoreRun(t)
	dir := t.TempDir()
	run := func(ctx context.Context, tl *timeline, resume bool) ([]rollout.StepSummary, error) {
		cfg := sr.config(t, dir, &timedRunner{inner: sr.runner(t), tl: tl})
		cfg.Steps, cfg.Resume = 4, resume
		cfg.Store = openSQLite(t, filepath.Join(dir, "store.db"))
		cfg.Training = &Training{MaxStaleness: 1, PartialRollouts: PartialRestart, Trainers: map[rollout.Role]trainerbridge.Trainer{
			rollout.RolePlanner: &slowTrainer{tl: tl, delay: 200 * time.Millisecond},
		}}
		f, err := New(cfg, sr.tasks)
		if err != nil {
			t.Fatal(err)
		}
		return f.Run(ctx)
	}
	tl := newTimeline()
	ctx, cancel := context.WithCancel(context.Background())
	go cancelWhen(tl, cancel, func() bool { _, ok := tl.trainStart[2]; return ok })
	if _, err := run(ctx, tl, false); err == nil {
		t.Fatal("the interrupted run reported no error")
	}
	again := newTimeline()
	sums, err := run(context.Background(), again, true)
	if err != nil || len(sums) != 4 {
		t.Fatalf("resumed: %d steps, %v", len(sums), err)
	}
	trained := map[string]int{}
	for k, n := range tl.trainedKeys {
		if tl.trainEnd[stepOfKey(k)] != (time.Time{}) {
			trained[k] += n
		}
	}
	for k, n := range again.trainedKeys {
		trained[k] += n
	}
	if len(trained) != 4 {
		t.Errorf("%d steps trained over both runs, want 4: %v / %v", len(trained), tl.trainedKeys, again.trainedKeys)
	}
	for k, n := range trained {
		if n != 1 {
			t.Errorf("batch %s trained %d times", k, n)
		}
	}
	for _, sum := range sums {
		if sum.Rollouts != 12 {
			t.Errorf("step %d holds %d rollouts, want 12", sum.Step, sum.Rollouts)
		}
	}
}
