package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mgrpo/mgrpo/store"
)

// A streamed run keeps, besides the step records, two kinds of records in
// the store, as step files (no new table or key type):
//
//   - each draw's start (drawFile under the draw's key, drawKey(n)),
//     written before its rollouts start: a resumed run restores every
//     draw started and not assigned to a step with the staleness deadline
//     it had;
//   - each step's manifest (manifestFile under the step), written before
//     the step is assembled and trained: its draws in completion order and
//     the groups it discarded, so a resumed run rebuilds the same batch.
//
// Draw results are stored under the draw's key as the fixed steps' are
// under their step, one per rollout as it finishes.
const (
	manifestFile = "manifest.json"
	drawFile     = "draw.json"
)

// drawKey is the store's step key of draw n's results and record: draws
// are numbered from 1 and their keys are negative, so they never meet a
// step's.
func drawKey(n int) int { return -n }

// streamManifest is a streamed step's membership.
type streamManifest struct {
	Step int `json:"step"`
	// Draws are the step's groups' draws in the order they completed.
	Draws []int `json:"draws"`
	// Discarded are the draws whose groups dynamic sampling left out of
	// the step; Capped says the cap on them was reached.
	Discarded []int `json:"discarded,omitempty"`
	Capped    bool  `json:"capped,omitempty"`
	// PolicyVersion and ExecutorPolicyVersion are the oldest versions the
	// step's draws started with.
	PolicyVersion         int64 `json:"policy_version"`
	ExecutorPolicyVersion int64 `json:"executor_policy_version"`
}

// drawRecord is what a draw's start leaves in the store.
type drawRecord struct {
	// Trained is how many steps were trained when the draw started: it
	// must be trained by step Trained+MaxStaleness+1.
	Trained int `json:"trained"`
}

// putManifest records step's manifest (and the step as scheduled, so a
// run started again without resuming is refused).
func (a *storeAccess) putManifest(ctx context.Context, run string, m streamManifest, rollouts int) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("manifest of step %d: %w", m.Step, err)
	}
	rec := store.StepRecord{Step: m.Step, Status: store.StepScheduled, Rollouts: rollouts}
	if err := a.retry(ctx, fmt.Sprintf("record step %d", m.Step), func(ctx context.Context) error {
		return a.store.PutStep(ctx, run, rec)
	}); err != nil {
		return err
	}
	return a.retry(ctx, fmt.Sprintf("record the manifest of step %d", m.Step), func(ctx context.Context) error {
		return a.store.PutStepFile(ctx, run, m.Step, manifestFile, data)
	})
}

// manifest returns step's manifest, false when none is stored.
func (a *storeAccess) manifest(ctx context.Context, run string, step int) (streamManifest, bool, error) {
	var m streamManifest
	ok, err := a.stepJSON(ctx, run, step, manifestFile, &m)
	if ok && m.Step != step {
		return m, false, fmt.Errorf("manifest of step %d in the store names step %d: %w", step, m.Step, store.ErrCorrupt)
	}
	return m, ok, err
}

// putDrawRecord records draw n's start.
func (a *storeAccess) putDrawRecord(ctx context.Context, run string, n int, r drawRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("record of draw %d: %w", n, err)
	}
	return a.retry(ctx, fmt.Sprintf("record the start of draw %d", n), func(ctx context.Context) error {
		return a.store.PutStepFile(ctx, run, drawKey(n), drawFile, data)
	})
}

// drawRecord returns draw n's start record, false when the draw never
// started.
func (a *storeAccess) drawRecord(ctx context.Context, run string, n int) (drawRecord, bool, error) {
	var r drawRecord
	ok, err := a.stepJSON(ctx, run, drawKey(n), drawFile, &r)
	return r, ok, err
}

// stepJSON decodes the step file name of step into v; false when absent.
func (a *storeAccess) stepJSON(ctx context.Context, run string, step int, name string, v any) (bool, error) {
	var data []byte
	err := a.retry(ctx, fmt.Sprintf("read %s of %d", name, step), func(ctx context.Context) error {
		var err error
		data, err = a.store.StepFile(ctx, run, step, name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s of %d in the store: %w: %w", name, step, store.ErrCorrupt, err)
	}
	return true, nil
}

// drawDigests returns the digests of draw n's results in the store, by
// task id.
func (a *storeAccess) drawDigests(ctx context.Context, run string, n int) (map[string]resultDigest, error) {
	return a.digests(ctx, run, drawKey(n))
}

// putDrawResult stores a rollout result of draw n (the first stored for a
// rollout wins).
func (a *storeAccess) putDrawResult(ctx context.Context, n int, r *RolloutResult) error {
	var putErr error
	err := encodeResult(r, func(raw json.RawMessage) error {
		putErr = a.retry(ctx, "store the result of "+r.Task.ID(), func(ctx context.Context) error {
			return a.store.PutResult(ctx, r.Task.Run, drawKey(n), r.Task.ID(), raw)
		})
		return putErr
	})
	if err != nil && putErr == nil {
		return fmt.Errorf("encode %s: %w", r.describe(), err)
	}
	return err
}

// streamResults hands a streamed step's results to assembly: result
// q·K+k is rollout k of the step's q-th draw, from memory or the store.
type streamResults struct {
	st    *storeAccess
	draws []*draw
	group int
}

func (s streamResults) put(context.Context, int, *RolloutResult) error {
	return errors.New("streamed results are stored by draw")
}

func (s streamResults) get(ctx context.Context, i int) (*RolloutResult, error) {
	d, k := s.draws[i/s.group], i%s.group
	if s.st == nil {
		r := d.results[k]
		d.results[k] = nil
		if r == nil {
			return nil, fmt.Errorf("no result for rollout %d of draw %d", k, d.n)
		}
		return r, nil
	}
	return s.st.storedResult(ctx, d.plan.units[k], drawKey(d.n))
}
