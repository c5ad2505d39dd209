package farm

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// weightsTrainer answers version = previous + step and names the new
// weights, so that the farm syncs them; each step takes delay.
type weightsTrainer struct {
	delay time.Duration
	step  int64
	// holdStep's training waits, when hold is set, until hold is closed.
	holdStep int
	hold     <-chan struct{}
}

func (w *weightsTrainer) Start(context.Context) error { return nil }
func (w *weightsTrainer) Close() error                { return nil }
func (w *weightsTrainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	if w.hold != nil && b.Step == w.holdStep {
		select {
		case <-w.hold:
		case <-ctx.Done():
			return trainerbridge.StepResult{}, ctx.Err()
		}
	}
	select {
	case <-time.After(w.delay):
	case <-ctx.Done():
		return trainerbridge.StepResult{}, ctx.Err()
	}
	v := b.PolicyVersion + max(w.step, 1)
	return trainerbridge.StepResult{Version: v, Weights: fmt.Sprintf("w-%d", v)}, nil
}

// noteSyncer records the last version it synced.
type noteSyncer struct {
	inner  Syncer
	synced atomic.Int64
}

func (n *noteSyncer) Sync(ctx context.Context, role, ref string, version int64, step int) error {
	if err := n.inner.Sync(ctx, role, ref, version, step); err != nil {
		return err
	}
	n.synced.Store(version)
	return nil
}

// waitSynced waits until version is synced or ctx ends.
func (n *noteSyncer) waitSynced(ctx context.Context, version int64) error {
	for n.synced.Load() < version {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// spanRunner plays two rollouts of step 3 itself, by two calls to the sim:
// rollout k=0 makes its first call, waits until step 2's weights (version
// 2) serve, and makes its second; rollout k=1 waits before its first call.
// Every other rollout is the inner runner's.
type spanRunner struct {
	inner  Runner
	query  string
	client *llm.Client
	sync   *noteSyncer
	// called is closed once rollout k=0 has made its first call, before
	// which step 2 is not trained (so its update comes after that call).
	called     chan struct{}
	calledOnce sync.Once
	mu         sync.Mutex
	starts     map[string]int
}

func (r *spanRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	if task.Step != 3 || task.K > 1 || task.QueryID != r.query {
		return r.inner.Run(ctx, task, t)
	}
	r.mu.Lock()
	r.starts[task.ID()]++
	r.mu.Unlock()
	tr := &agents.Trajectory{Role: agents.RoleSingle, Task: t.Question}
	out := &agents.Rollout{Question: t.Question, Planner: tr}
	msgs := []openai.ChatCompletionMessage{{Role: "user", Content: t.Question}}
	call := func() bool {
		turn, err := r.client.Chat(ctx, llm.Request{Messages: msgs})
		if err != nil {
			tr.Error = err.Error()
			return false
		}
		tr.Turns = append(tr.Turns, turn)
		tr.Steps = append(tr.Steps, agents.Step{})
		msgs = append(msgs, turn.Message, openai.ChatCompletionMessage{Role: "user", Content: "Go on."})
		return true
	}
	wait := func() bool {
		if err := r.sync.waitSynced(ctx, 2); err != nil {
			tr.Error = err.Error()
			return false
		}
		return true
	}
	if task.K == 0 {
		_ = call() && r.notify() && wait() && call()
	} else {
		_ = wait() && call() && call()
	}
	return out
}

// notify closes called once.
func (r *spanRunner) notify() bool {
	r.calledOnce.Do(func() { close(r.called) })
	return true
}

// spanRun runs 3 steps of mode single at S = 1 against the sim's vLLM
// dialect, synced by the vLLM weight sync, with spanRunner's two rollouts
// in step 3, and returns the summaries, the run's directory and the
// runner.
func spanRun(t *testing.T, partial PartialRollouts) ([]rollout.StepSummary, string, *spanRunner) {
	if testing.Short() {
		t.Skip("plays rollouts against the sim world")
	}
	cfg := simllm.DefaultConfig()
	cfg.Seed = 4
	cfg.TTFT = 5 * time.Millisecond
	llmURL, webURL := startSimServers(t, cfg)
	tasks := simTasks(t, 4)
	sy, err := weightsync.New(weightsync.KindVLLM, []string{llmURL}, weightsync.Options{PathTemplate: "/ckpt/{ref}",
		VersionPath: "/weight_info", PauseMode: "keep", Update: weightsync.UpdateAction{Path: "/sim/update_weights",
			Body: `{"model_path": "{path}", "weight_version": "{version}"}`}})
	if err != nil {
		t.Fatal(err)
	}
	note := &noteSyncer{inner: sy}
	client, err := llm.New(llm.Config{Role: "single", Dialect: llm.DialectVLLM, Model: simllm.DefaultModel, Endpoints: []string{llmURL}, CaptureTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	// Step 3 holds tasks 0 and 1 (batch 2 over 4 tasks).
	runner := &spanRunner{inner: newSimRunner(t, llmURL, webURL, simRunnerConfig{mode: rollout.ModeSingle}), query: tasks[0].ID,
		client: client, sync: note, called: make(chan struct{}), starts: map[string]int{}}
	dir := t.TempDir()
	fc := Config{Run: "span", Seed: 3, Steps: 3, BatchSize: 2, GroupSize: 2, Mode: rollout.ModeSingle,
		Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 4, Runner: runner,
		Sink: rollout.DirSink{Dir: dir}, Store: openSQLite(t, filepath.Join(dir, "store.db")),
		Training: &Training{MaxStaleness: 1, PartialRollouts: partial,
			Trainers: map[rollout.Role]trainerbridge.Trainer{rollout.RolePlanner: &weightsTrainer{delay: 50 * time.Millisecond, holdStep: 2, hold: runner.called}},
			Syncers:  map[rollout.Role]Syncer{rollout.RolePlanner: note}}}
	return mustRunFarm(t, fc, tasks), dir, runner
}

// spanned reads step 3's inspection lines of the two scripted rollouts:
// by k, the versions the sim reported for their turns and the versions
// their tasks were (re)scheduled with.
func spanned(t *testing.T, dir, query string) (turns map[int][]string, scheduled map[int]int64) {
	t.Helper()
	turns, scheduled = map[int][]string{}, map[int]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(mustReadFile(t, filepath.Join(rollout.StepDir(dir, 3), rollout.RolloutsFile)))), "\n") {
		var rec rollout.RolloutRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Task.K > 1 || rec.Task.QueryID != query {
			continue
		}
		turns[rec.Task.K] = weightVersionsOf(line)
		scheduled[rec.Task.K] = rec.Task.PolicyVersion
	}
	return turns, scheduled
}

// weightVersionsOf returns the weight_version values of a JSON line.
func weightVersionsOf(line string) []string {
	var out []string
	for _, part := range strings.Split(line, `"weight_version":"`)[1:] {
		if i := strings.IndexByte(part, '"'); i >= 0 {
			out = append(out, part[:i])
		}
	}
	return out
}

// TestPartialRolloutsContinue: a rollout in flight at a weight update goes
// on with the new weights; its turns record the two versions the sim
// reported and its samples the oldest. A rollout that started after the
// update, though scheduled before it, records the version that served it.
func TestPartialRolloutsContinue(t *testing.T) {
	sums, dir, runner := spanRun(t, PartialContinue)
	turns, scheduled := spanned(t, dir, runner.query)
	if got := turns[0]; len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Fatalf("rollout k=0 spanning the update: turns served by %v, want [1 2] (all: %v)", got, turns)
	}
	if got := turns[1]; len(got) != 2 || got[0] != "2" || got[1] != "2" {
		t.Fatalf("rollout k=1 started after the update: turns served by %v, want [2 2]", got)
	}
	if scheduled[0] != 1 || scheduled[1] != 1 {
		t.Errorf("scheduled versions %v, want 1 (step 3 is admitted once step 1 is trained)", scheduled)
	}
	planner, _, _ := mustReadStep(t, dir, 3)
	want := map[int]int64{0: 1, 1: 2} // the oldest turn's
	found := 0
	for _, s := range planner {
		if s.QueryID != runner.query || s.Rollout > 1 {
			continue
		}
		found++
		if s.PolicyVersion != want[s.Rollout] {
			t.Errorf("rollout k=%d's sample: version %d, want its oldest turn's, %d", s.Rollout, s.PolicyVersion, want[s.Rollout])
		}
	}
	if found < 2 {
		t.Fatalf("found %d samples of the two scripted rollouts", found)
	}
	sum := sums[2]
	if sum.TurnsByVersion["1"] == 0 || sum.TurnsByVersion["2"] == 0 {
		t.Errorf("step 3 turns by version %v, want some at 1 and some at 2", sum.TurnsByVersion)
	}
	if sum.RestartedRollouts != 0 {
		t.Errorf("continue restarted %d rollouts", sum.RestartedRollouts)
	}
	rec := sum.Training[string(rollout.RolePlanner)]
	if rec.SampledVersion != 1 || rec.Staleness != 1 || rec.StaleSamples != 0 {
		t.Errorf("step 3's training %+v: want sampled at 1, staleness 1, nothing stale", rec)
	}
	for id, n := range runner.starts {
		if n != 1 {
			t.Errorf("continue: rollout %s started %d times", id, n)
		}
	}
}

// TestPartialRolloutsRestart: the rollouts in flight at a weight update
// are cancelled and run again from scratch at the new version, counted.
func TestPartialRolloutsRestart(t *testing.T) {
	sums, dir, runner := spanRun(t, PartialRestart)
	turns, scheduled := spanned(t, dir, runner.query)
	if len(turns) != 2 {
		t.Fatalf("scripted rollouts %v", turns)
	}
	for id, vs := range turns {
		if len(vs) != 2 || vs[0] != "2" || vs[1] != "2" {
			t.Errorf("restarted rollout k=%d: turns served by %v, want [2 2]", id, vs)
		}
		if scheduled[id] != 2 {
			t.Errorf("restarted rollout k=%d: scheduled at %d, want the new version 2", id, scheduled[id])
		}
	}
	for id, n := range runner.starts {
		if n != 2 {
			t.Errorf("rollout %s started %d times, want 2 (once before the update, once after)", id, n)
		}
	}
	if got := sums[2].RestartedRollouts; got < 2 {
		t.Errorf("step 3 counts %d restarted rollouts, want at least the 2 held across the update", got)
	}
	// The rollouts that finished before the update keep version 1.
	planner, _, _ := mustReadStep(t, dir, 3)
	for _, s := range planner {
		if s.QueryID == runner.query && s.Rollout <= 1 && s.PolicyVersion != 2 {
			t.Errorf("restarted rollout k=%d's sample: version %d, want 2", s.Rollout, s.PolicyVersion)
		}
	}
}
