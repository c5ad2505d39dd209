package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// statefulTrainers is the server side of the "statefake" trainer scheme: a
// trainer that, like Tinker, keeps state on its side (here: how many
// steps it trained) and must be resumed from it, with a log of what each
// trainer instance was asked.
var statefulTrainers = struct {
	sync.Mutex
	log     []string
	trained map[string]int // by run/role/step: how often
}{trained: map[string]int{}}

type statefulTrainer struct {
	role    string
	steps   int
	started bool
}

type statefulState struct {
	Steps int `json:"steps"`
}

func init() {
	trainerbridge.Register("statefake", func(_ context.Context, _ *url.URL, o trainerbridge.Options) (trainerbridge.Trainer, error) {
		return &statefulTrainer{role: string(o.Role)}, nil
	})
}

func (s *statefulTrainer) note(format string, args ...any) {
	statefulTrainers.Lock()
	defer statefulTrainers.Unlock()
	statefulTrainers.log = append(statefulTrainers.log, s.role+": "+fmt.Sprintf(format, args...))
}

func (s *statefulTrainer) Start(context.Context) error {
	s.started = true
	s.note("start at %d", s.steps)
	return nil
}

func (s *statefulTrainer) Train(_ context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	if !s.started {
		return trainerbridge.StepResult{}, errors.New("train before start")
	}
	if b.Step <= s.steps {
		// Answered from the state, as Tinker answers a replayed request.
		return trainerbridge.StepResult{Version: int64(b.Step), Weights: ""}, nil
	}
	s.steps = b.Step
	statefulTrainers.Lock()
	statefulTrainers.trained[b.IdempotencyKey()]++
	statefulTrainers.Unlock()
	return trainerbridge.StepResult{Version: int64(b.Step)}, nil
}

func (s *statefulTrainer) Close() error { return nil }

func (s *statefulTrainer) ResumeState() ([]byte, error) {
	return json.Marshal(statefulState{Steps: s.steps})
}

func (s *statefulTrainer) Resume(b []byte) error {
	if s.started {
		return errors.New("resume after start")
	}
	var st statefulState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	s.steps = st.Steps
	s.note("resumed at %d", s.steps)
	return nil
}

// TestTrainResumesTrainerState: a resumed `mgrpo train` restores each
// trainer's state saved with its last trained step before starting it.
func TestTrainResumesTrainerState(t *testing.T) {
	if testing.Short() {
		t.Skip("trains against the sim")
	}
	out := filepath.Join(t.TempDir(), "out")
	args := func(steps int, extra ...string) []string {
		return append([]string{"train", "--sim", "--out", out, "--run", "stateful", "--steps", fmt.Sprint(steps),
			"--batch-size", "2", "--group-size", "2", "--planner-trainer", "statefake://x", "--executor-trainer", "statefake://x",
			"--base-model-planner", "m", "--base-model-executor", "m", "--weight-sync", "none"}, extra...)
	}
	if code, _, stderr := runCLI(t, args(2)...); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, args(3, "--resume")...); code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, stderr)
	}
	statefulTrainers.Lock()
	defer statefulTrainers.Unlock()
	want := map[string]bool{"planner: resumed at 2": true, "executor: resumed at 2": true}
	for _, line := range statefulTrainers.log {
		delete(want, line)
	}
	if len(want) != 0 {
		t.Errorf("the resumed run did not restore the trainers' states %v; log: %q", want, statefulTrainers.log)
	}
	if len(statefulTrainers.trained) != 6 {
		t.Errorf("%d batches trained, want 6 (3 steps × 2 roles): %v", len(statefulTrainers.trained), statefulTrainers.trained)
	}
	for key, n := range statefulTrainers.trained {
		if n != 1 {
			t.Errorf("batch %s trained %d times", key, n)
		}
	}
}
