package trainertest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// Opener returns a fresh, not yet started Trainer for role of run; the
// suite closes it. Trainers opened for the same run and role by one Opener
// must reach the same backing state (the same directory, the same server),
// so that a reopened trainer can be checked to resume.
type Opener func(t *testing.T, run string, role rollout.Role) trainerbridge.Trainer

// Run is the conformance suite every Trainer backend runs:
//   - Start succeeds and may be called on a new trainer for the same run;
//   - Train returns a result whose Version is at least the batch's
//     PolicyVersion, and a second Train of the same batch returns the same
//     result (it does not train twice);
//   - a reopened trainer given an already trained batch returns the same
//     result as well (a retried step after a crash);
//   - a later step of the same run trains (its version does not go back);
//   - both roles train independently;
//   - Close may be called twice.
func Run(t *testing.T, open Opener) {
	t.Run("TrainIsIdempotent", func(t *testing.T) { testIdempotent(t, open) })
	t.Run("ReopenedTrainerReturnsTheSameResult", func(t *testing.T) { testReopen(t, open) })
	t.Run("BothRoles", func(t *testing.T) { testRoles(t, open) })
	t.Run("CloseTwice", func(t *testing.T) {
		tr := open(t, "close-twice", rollout.RolePlanner)
		if err := tr.Start(Context(t)); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Fatalf("first Close: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// Context returns a context cancelled when t ends, with a deadline well
// inside the test's.
func Context(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startTrainer opens and starts a trainer, closing it when t ends.
func startTrainer(t *testing.T, open Opener, run string, role rollout.Role) trainerbridge.Trainer {
	t.Helper()
	tr := open(t, run, role)
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := tr.Start(Context(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return tr
}

func mustTrain(t *testing.T, tr trainerbridge.Trainer, b trainerbridge.Batch) trainerbridge.StepResult {
	t.Helper()
	res, err := tr.Train(Context(t), b)
	if err != nil {
		t.Fatalf("Train %s: %v", b.IdempotencyKey(), err)
	}
	if res.Version < b.PolicyVersion {
		t.Errorf("Train %s: version %d, below the batch's policy version %d", b.IdempotencyKey(), res.Version, b.PolicyVersion)
	}
	return res
}

func testIdempotent(t *testing.T, open Opener) {
	const run = "idempotent"
	tr := startTrainer(t, open, run, rollout.RoleExecutor)
	_, exec := MustBatches(t, BatchSpec{Run: run, Step: 1, PolicyVersion: 3, Seed: 1})
	first := mustTrain(t, tr, exec)
	again := mustTrain(t, tr, exec)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("second Train of the same batch (-first +second):\n%s", diff)
	}
	_, next := MustBatches(t, BatchSpec{Run: run, Step: 2, PolicyVersion: first.Version, Seed: 2})
	later := mustTrain(t, tr, next)
	if later.Version < first.Version {
		t.Errorf("step 2: version %d, below step 1's %d", later.Version, first.Version)
	}
}

func testReopen(t *testing.T, open Opener) {
	const run = "reopen"
	plan, _ := MustBatches(t, BatchSpec{Run: run, Step: 4, PolicyVersion: 7, Seed: 3})
	tr := startTrainer(t, open, run, rollout.RolePlanner)
	first := mustTrain(t, tr, plan)
	reopened := startTrainer(t, open, run, rollout.RolePlanner)
	again := mustTrain(t, reopened, plan)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("Train of an already trained batch by a reopened trainer (-first +reopened):\n%s", diff)
	}
}

func testRoles(t *testing.T, open Opener) {
	const run = "roles"
	plan, exec := MustBatches(t, BatchSpec{Run: run, Step: 1, PolicyVersion: 0, Seed: 4})
	p := startTrainer(t, open, run, rollout.RolePlanner)
	e := startTrainer(t, open, run, rollout.RoleExecutor)
	pr := mustTrain(t, p, plan)
	er := mustTrain(t, e, exec)
	if again := mustTrain(t, p, plan); !cmp.Equal(pr, again) {
		t.Errorf("planner step retried after the executor's: %+v, first %+v", again, pr)
	}
	if again := mustTrain(t, e, exec); !cmp.Equal(er, again) {
		t.Errorf("executor step retried: %+v, first %+v", again, er)
	}
}
