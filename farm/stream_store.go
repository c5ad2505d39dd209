package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// A streamed run keeps, besides the step records, two kinds of records in
// the store:
//
//   - each draw's start (the store's draw record, store.Draws), written
//     before its rollouts start: a resumed run restores every draw started
//     and not assigned to a step with the staleness deadline it had;
//   - each step's manifest (manifestFile under the step), written before
//     the step is assembled and trained: its draws in completion order and
//     the groups it discarded, so a resumed run rebuilds the same batch.
//
// Draw results are stored under the draw's key (store.Draws) as the fixed
// steps' are under their step, one per rollout as it finishes.
//
// An mgrpo before the store's draws kept both under the step key −n, the
// record as the step file drawFile: a resumed run whose draw 1 is found
// there only (legacyDraws) reads every draw from both places, so a run
// started by it resumes.
const (
	manifestFile = "manifest.json"
	drawFile     = "draw.json"
)

// legacyDrawKey is the step key under which an older mgrpo kept draw n's
// results and record.
func legacyDrawKey(n int) int { return -n }

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
		return a.store.PutDraw(ctx, run, n, data)
	})
}

// drawRecord returns draw n's start record, false when the draw never
// started.
func (a *storeAccess) drawRecord(ctx context.Context, run string, n int) (drawRecord, bool, error) {
	var data []byte
	err := a.retry(ctx, fmt.Sprintf("read the record of draw %d", n), func(ctx context.Context) error {
		var err error
		data, err = a.store.Draw(ctx, run, n)
		return err
	})
	var r drawRecord
	switch {
	case errors.Is(err, store.ErrNotFound) && a.legacyDraws.Load():
		ok, err := a.stepJSON(ctx, run, legacyDrawKey(n), drawFile, &r)
		return r, ok, err
	case errors.Is(err, store.ErrNotFound):
		return r, false, nil
	case err != nil:
		return r, false, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, false, fmt.Errorf("record of draw %d in the store: %w: %w", n, store.ErrCorrupt, err)
	}
	return r, true, nil
}

// detectLegacyDraws finds whether the run's draws were started by an mgrpo
// that kept them under negative step keys (draw 1 is there and not in the
// store's draws), and if so reads them from there too from now on.
func (a *storeAccess) detectLegacyDraws(ctx context.Context, run string) error {
	if _, ok, err := a.drawRecord(ctx, run, 1); err != nil || ok {
		return err
	}
	var r drawRecord
	ok, err := a.stepJSON(ctx, run, legacyDrawKey(1), drawFile, &r)
	if err != nil || !ok {
		return err
	}
	a.legacyDraws.Store(true)
	a.log.Info("the store holds this run's draws in the layout of an older mgrpo (under negative steps): they are read from there")
	return nil
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
	out := map[string]resultDigest{}
	err := a.retry(ctx, fmt.Sprintf("read the results of draw %d", n), func(ctx context.Context) error {
		clear(out)
		return a.store.ScanDrawResults(ctx, run, n, func(id string, raw json.RawMessage) error {
			d, err := decodeDigest(raw)
			if err != nil {
				return fmt.Errorf("result of %s: %w: %w", id, store.ErrCorrupt, err)
			}
			addDigest(out, id, d)
			return nil
		})
	})
	if err != nil || !a.legacyDraws.Load() {
		return out, err
	}
	old, err := a.digests(ctx, run, legacyDrawKey(n))
	for id, d := range old {
		if _, ok := out[id]; !ok {
			out[id] = d
		}
	}
	return out, err
}

// putDrawResult stores a rollout result of draw n (the first stored for a
// rollout wins).
func (a *storeAccess) putDrawResult(ctx context.Context, n int, r *RolloutResult) error {
	var putErr error
	err := encodeResult(r, func(raw json.RawMessage) error {
		putErr = a.retry(ctx, "store the result of "+r.Task.ID(), func(ctx context.Context) error {
			return a.store.PutDrawResult(ctx, r.Task.Run, n, a.resultKey(r), raw)
		})
		return putErr
	})
	if err != nil && putErr == nil {
		return fmt.Errorf("encode %s: %w", r.describe(), err)
	}
	return err
}

// drawResult reads the result of task u of draw n and checks it is u's.
func (a *storeAccess) drawResult(ctx context.Context, u rollout.RolloutTask, n int) (*RolloutResult, error) {
	var raw json.RawMessage
	err := a.retry(ctx, "read the result of "+u.ID(), func(ctx context.Context) error {
		var err error
		raw, err = a.store.DrawResult(ctx, u.Run, n, u.ID())
		return err
	})
	if errors.Is(err, store.ErrNotFound) && a.legacyDraws.Load() {
		return a.storedResult(ctx, u, legacyDrawKey(n))
	}
	if err != nil {
		return nil, err
	}
	return decodeStoredResult(u, raw)
}

// dropDrawResults removes draw n's results once its step is recorded.
func (a *storeAccess) dropDrawResults(ctx context.Context, run string, n int) error {
	return a.retry(ctx, fmt.Sprintf("drop the results of draw %d", n), func(ctx context.Context) error {
		if a.legacyDraws.Load() {
			if err := a.store.DeleteResults(ctx, run, legacyDrawKey(n)); err != nil {
				return err
			}
		}
		return a.store.DeleteDrawResults(ctx, run, n)
	})
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
	return s.st.drawResult(ctx, d.plan.units[k], d.n)
}
