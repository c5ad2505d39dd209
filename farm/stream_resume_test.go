package farm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ranRunner records the id of every rollout it runs.
type ranRunner struct {
	inner Runner
	mu    sync.Mutex
	ran   map[string]bool
}

func (r *ranRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	r.mu.Lock()
	r.ran[task.ID()] = true
	r.mu.Unlock()
	return r.inner.Run(ctx, task, t)
}

// TestStreamedTrainingResumes interrupts a streamed run once step 2
// trains and while draw 5 runs, and resumes it: every step is trained once,
// no draw is in two steps, every draw started in time to be due within the
// run is trained, and no rollout stored before the interruption runs again.
func TestStreamedTrainingResumes(t *testing.T) { testStreamedResume(t, false) }

// TestStreamedTrainingResumesLegacyDraws resumes a streamed run whose
// draws were stored as an mgrpo before the store's draws kept them (under
// negative step keys), as TestStreamedTrainingResumes does.
func TestStreamedTrainingResumesLegacyDraws(t *testing.T) { testStreamedResume(t, true) }

// legacyDrawStore keeps draws as an mgrpo before store.Draws did: under
// the step key −n, the record as the step file draw.json.
type legacyDrawStore struct{ store.Store }

func (s legacyDrawStore) PutDraw(ctx context.Context, run string, n int, rec []byte) error {
	return s.PutStepFile(ctx, run, -n, drawFile, rec)
}

func (s legacyDrawStore) Draw(ctx context.Context, run string, n int) ([]byte, error) {
	return s.StepFile(ctx, run, -n, drawFile)
}

func (s legacyDrawStore) PutDrawResult(ctx context.Context, run string, n int, id string, r json.RawMessage) error {
	return s.PutResult(ctx, run, -n, id, r)
}

func (s legacyDrawStore) DrawResult(ctx context.Context, run string, n int, id string) (json.RawMessage, error) {
	return s.Result(ctx, run, -n, id)
}

func (s legacyDrawStore) ScanDrawResults(ctx context.Context, run string, n int, fn func(string, json.RawMessage) error) error {
	return s.ScanResults(ctx, run, -n, fn)
}

func (s legacyDrawStore) DeleteDrawResults(ctx context.Context, run string, n int) error {
	return s.DeleteResults(ctx, run, -n)
}

// testStreamedResume interrupts and resumes a streamed run; with legacy,
// the interrupted run stores its draws in the old layout.
func testStreamedResume(t *testing.T, legacy bool) {
	sr := newStoreRun(t)
	dir := t.TempDir()
	const steps = 4
	var logs syncBuffer
	run := func(ctx context.Context, tl *timeline, runner *ranRunner, resume bool) ([]rollout.StepSummary, error) {
		cfg := sr.config(t, dir, &timedRunner{inner: runner, tl: tl})
		if resume {
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		}
		cfg.Steps, cfg.BatchSize, cfg.Resume = steps, 2, resume
		cfg.Store = openSQLite(t, filepath.Join(dir, "store.db"))
		if legacy && !resume {
			cfg.Store = legacyDrawStore{cfg.Store}
		}
		cfg.Training = &Training{StreamGroups: true, MaxStaleness: 1, Trainers: map[rollout.Role]trainerbridge.Trainer{
			rollout.RolePlanner: &slowTrainer{tl: tl, delay: 300 * time.Millisecond},
		}}
		f, err := New(cfg, sr.tasks)
		if err != nil {
			t.Fatal(err)
		}
		return f.Run(ctx)
	}
	tl := newTimeline()
	ctx, cancel := context.WithCancel(context.Background())
	go cancelWhen(tl, cancel, func() bool {
		_, trained := tl.trainStart[2]
		_, drawn := tl.firstRun[5]
		return trained && drawn
	})
	// Draw 5's last rollout runs until the interruption: a draw surely in
	// flight then, its other rollouts possibly stored.
	inner := sr.runner(t)
	first := &ranRunner{ran: map[string]bool{}, inner: runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		if task.Step == 5 && task.K == 3 {
			<-ctx.Done()
		}
		return inner.Run(ctx, task, tk)
	})}
	if _, err := run(ctx, tl, first, false); err == nil {
		t.Fatal("the interrupted run reported no error")
	}
	st := openSQLite(t, filepath.Join(dir, "store.db"))
	acc := &storeAccess{store: st, log: slog.New(slog.DiscardHandler)}
	if legacy {
		if _, err := st.Draw(context.Background(), "stored", 1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the legacy run stored draw 1 under the store's draws: %v", err)
		}
		acc.legacyDraws.Store(true)
	} else if _, err := st.StepFile(context.Background(), "stored", -1, drawFile); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("draw 1 stored under the step key -1: %v, want it under the store's draws only", err)
	}
	stored := map[string]bool{}
	inFlight := 0
	for n := 1; ; n++ {
		if _, ok, err := acc.drawRecord(context.Background(), "stored", n); err != nil || !ok {
			break
		}
		have, err := acc.drawDigests(context.Background(), "stored", n)
		if err != nil {
			t.Fatal(err)
		}
		for id := range have {
			stored[id] = true
		}
		inFlight++
	}
	again := newTimeline()
	second := &ranRunner{inner: sr.runner(t), ran: map[string]bool{}}
	sums, err := run(context.Background(), again, second, true)
	if err != nil || len(sums) != steps {
		t.Fatalf("resumed: %d steps, %v", len(sums), err)
	}
	t.Logf("draws started before the interruption: %d; their rollouts stored and not yet trained: %d", inFlight, len(stored))
	if !strings.Contains(logs.String(), "streamed step rebuilt from its manifest") {
		t.Errorf("the resumed run rebuilt no step from its manifest (step 2 was training at the interruption):\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "draw in flight when the run stopped: redone\" draw=5") {
		t.Errorf("the resumed run did not redo draw 5, in flight at the interruption:\n%s", logs.String())
	}
	for id := range stored {
		if second.ran[id] {
			t.Errorf("rollout %s stored before the interruption ran again", id)
		}
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
	if len(trained) != steps {
		t.Errorf("%d steps trained over both runs, want %d: %v / %v", len(trained), steps, tl.trainedKeys, again.trainedKeys)
	}
	for k, n := range trained {
		if n != 1 {
			t.Errorf("batch %s trained %d times", k, n)
		}
	}
	inStep := map[int]int{}
	for step := 1; step <= steps; step++ {
		m, ok, err := acc.manifest(context.Background(), "stored", step)
		if err != nil || !ok {
			t.Fatalf("manifest of step %d: %v, %v", step, ok, err)
		}
		if !slices.Equal(m.Draws, sums[step-1].Draws) || len(m.Draws) != 2 {
			t.Errorf("step %d: manifest draws %v, summary %v", step, m.Draws, sums[step-1].Draws)
		}
		for _, n := range append(m.Draws, m.Discarded...) {
			if prev, ok := inStep[n]; ok {
				t.Errorf("draw %d in steps %d and %d", n, prev, step)
			}
			inStep[n] = step
		}
		if sums[step-1].Rollouts != 8 {
			t.Errorf("step %d holds %d rollouts, want 8", step, sums[step-1].Rollouts)
		}
	}
	for n := 1; ; n++ {
		rec, ok, err := acc.drawRecord(context.Background(), "stored", n)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if due := rec.Trained + 1 + 1; due <= steps && inStep[n] == 0 {
			t.Errorf("draw %d (due by step %d) was never trained", n, due)
		} else if inStep[n] > due {
			t.Errorf("draw %d trained in step %d, due by %d", n, inStep[n], due)
		}
	}
	if results, err := acc.drawDigests(context.Background(), "stored", sums[0].Draws[0]); err != nil || len(results) != 0 {
		t.Errorf("results of a trained draw kept: %d, %v", len(results), err)
	}
	if legacy && !strings.Contains(logs.String(), "layout of an older mgrpo") {
		t.Errorf("the resumed run did not say it read the draws of the older layout:\n%s", logs.String())
	}
}

// zeroVarianceRunner answers every rollout of the queries in same right (a
// group of equal rewards) and the others' right for even k only.
func zeroVarianceRunner(same map[string]bool) Runner {
	return runnerFunc(func(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
		answer := mixedAnswer(t, task)
		if same[t.ID] {
			answer = t.Answer
		}
		return scriptedRollout(t, task, 1, answer)
	})
}

// TestStreamedDynamicSampling draws on until each step holds B groups
// whose rewards differ, discarding the others and counting them.
func TestStreamedDynamicSampling(t *testing.T) {
	same := map[string]bool{"q0": true, "q1": true}
	log := &batchLog{}
	cfg := streamConfig(t.TempDir(), zeroVarianceRunner(same), 4, 2, 1, log)
	cfg.DropZeroVariance = true
	cfg.Training.MaxExtraDraws = 8
	sums := mustRunFarm(t, cfg, testTasks(4))
	extra := 0
	for _, sum := range sums {
		extra += sum.ExtraDraws
		if sum.ExtraDraws != len(sum.DiscardedGroups) || sum.ExtraDrawsCapped {
			t.Errorf("step %d: %d extra draws, discarded %v, capped %v", sum.Step, sum.ExtraDraws, sum.DiscardedGroups, sum.ExtraDrawsCapped)
		}
		for _, n := range sum.DiscardedGroups {
			if q := testTasks(4)[(n-1)%4].ID; !same[q] {
				t.Errorf("step %d: draw %d of %s discarded, its rewards differ", sum.Step, n, q)
			}
		}
		for _, n := range sum.Draws {
			if q := testTasks(4)[(n-1)%4].ID; same[q] {
				t.Errorf("step %d: draw %d of %s, whose rewards are all equal, counted", sum.Step, n, q)
			}
		}
		if sum.PlannerSamples != 4 {
			t.Errorf("step %d: %d planner samples, want 4 (two groups of 2)", sum.Step, sum.PlannerSamples)
		}
	}
	// Half the draws ask q0 or q1: as many are discarded as counted.
	if extra < 6 {
		t.Errorf("%d groups discarded over the run, want at least 6", extra)
	}
	checkStreamedBatches(t, sums, log, 1, 4)
}

// TestStreamedDynamicSamplingCap: with every group's rewards equal, a step
// discards at most MaxExtraDraws of them and then counts them, saying so.
func TestStreamedDynamicSamplingCap(t *testing.T) {
	same := map[string]bool{"q0": true, "q1": true, "q2": true, "q3": true}
	var mu sync.Mutex
	drawn := map[int]bool{}
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
		mu.Lock()
		drawn[task.Step] = true
		mu.Unlock()
		return zeroVarianceRunner(same).Run(ctx, task, t)
	})
	log := &batchLog{}
	cfg := streamConfig(t.TempDir(), runner, 4, 2, 1, log)
	cfg.DropZeroVariance = true
	cfg.Training.MaxExtraDraws = 1
	sums := mustRunFarm(t, cfg, testTasks(4))
	extra := 0
	for _, sum := range sums {
		extra += sum.ExtraDraws
		if sum.ExtraDraws > 1 || !sum.ExtraDrawsCapped || len(sum.Draws) != 2 {
			t.Errorf("step %d: %d extra draws (cap 1), capped %v, draws %v", sum.Step, sum.ExtraDraws, sum.ExtraDrawsCapped, sum.Draws)
		}
	}
	if extra == 0 {
		t.Error("no group discarded")
	}
	mu.Lock()
	defer mu.Unlock()
	// Steps·B counted, at most Steps·cap discarded, and one step's worth
	// beyond the run admitted.
	if max := 4*2 + 4*1 + 2; len(drawn) > max {
		t.Errorf("%d draws made, want at most %d", len(drawn), max)
	}
}
