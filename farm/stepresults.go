package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// resultDigest is what the farm keeps in memory of a finished rollout while
// its step runs: enough for progress and for d̄, not its tokens.
type resultDigest struct {
	// D is the rollout's d_k (executor trajectories).
	D      int     `json:"d"`
	Main   float64 `json:"main"`
	Failed bool    `json:"failed,omitempty"`
	// Drifts and HistoryEdits are the rollout's, over its trajectories
	// (the progress line shows them as rollouts finish).
	Drifts       int `json:"drifts,omitempty"`
	HistoryEdits int `json:"history_edits,omitempty"`
	// Infra marks an infra failure (its Cause), Retries its retries so
	// far: a resumed run retries it while retries are left, and a step
	// excludes its group (FailurePolicy.OnInfra) when none are.
	Infra    bool   `json:"infra,omitempty"`
	Cause    string `json:"cause,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	Retries  int    `json:"retries,omitempty"`
	// RetryCauses are an infra result's retried runs' causes, which its
	// retry on resume carries on.
	RetryCauses []string `json:"retry_causes,omitempty"`
	// pending marks a digest read from a pending-retry key (see
	// addDigest): the rollout's retries go on and its own result is to
	// come.
	pending bool
}

// kind is the digest's failure class: infra, model (any other failure) or
// none.
func (d resultDigest) kind() failure.Kind {
	switch {
	case d.Infra:
		return failure.KindInfra
	case d.Failed:
		return failure.KindModel
	}
	return failure.KindNone
}

func digestOf(r *RolloutResult) resultDigest {
	d := resultDigest{D: len(r.Tree.Executors), Main: r.Scores.Main, Failed: r.Failed(), Retries: r.Retries}
	for _, t := range append([]TrajectoryResult{r.Planner}, r.Executors...) {
		d.Drifts += t.Drifts
		d.HistoryEdits += t.HistoryEdits
	}
	if r.infra() {
		d.Infra, d.Endpoint, d.RetryCauses = true, r.FailureEndpoint, r.RetryCauses
	}
	if r.Failed() || d.Infra {
		d.Cause = r.FailureCause
	}
	return d
}

// stepResults holds a step's finished results until the step is assembled:
// in memory, or in the run's store so that memory does not grow with the
// step.
type stepResults interface {
	// put keeps result i of the plan; it is called once per rollout, from
	// the rollout's goroutine.
	put(ctx context.Context, i int, r *RolloutResult) error
	// get returns result i; assembly calls it once per rollout in plan
	// order, after which the result is not needed again.
	get(ctx context.Context, i int) (*RolloutResult, error)
}

// memResults keeps a step's results in memory, in their stored form (see
// storedForm): a step holds thousands of them until it is assembled, and
// their turns' completion ids would keep each trajectory's whole id array
// of the client alive besides the sequences.
type memResults []*RolloutResult

func (m memResults) put(_ context.Context, i int, r *RolloutResult) error {
	m[i] = storedForm(r)
	return nil
}

func (m memResults) get(_ context.Context, i int) (*RolloutResult, error) {
	r := m[i]
	m[i] = nil
	if r == nil {
		return nil, fmt.Errorf("no result for rollout %d", i)
	}
	return r, nil
}

// storedResults keeps a step's results in the run's store, each written as
// its rollout finishes: a resumed run needs the write. Assembly needs the
// result once more, and reading it back costs as much CPU as writing it,
// so the results are also kept in memory (in their stored form, as
// memResults keeps them), up to keptResultBytes of their stored size a
// step; the rest are read back.
type storedResults struct {
	st   *storeAccess
	plan *stepPlan

	mu        sync.Mutex
	kept      map[int]*RolloutResult
	keptSize  map[int]int
	keptBytes int
}

// keptResultBytes bounds the stored size of the results a step keeps in
// memory until it is assembled (about 75 KB a rollout of the sim; the
// results in memory take about twice that): a step of a few hundred
// rollouts is assembled without reading back, and at 10,000 in flight the
// ones kept are a few percent of the step for about 30 MB of heap.
const keptResultBytes = 16 << 20

func newStoredResults(st *storeAccess, plan *stepPlan) *storedResults {
	return &storedResults{st: st, plan: plan, kept: map[int]*RolloutResult{}, keptSize: map[int]int{}}
}

func (s *storedResults) put(ctx context.Context, i int, r *RolloutResult) error {
	n, err := s.st.putResult(ctx, r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keptBytes+n <= keptResultBytes {
		s.kept[i], s.keptSize[i] = storedForm(r), n
		s.keptBytes += n
	}
	return nil
}

func (s *storedResults) get(ctx context.Context, i int) (*RolloutResult, error) {
	s.mu.Lock()
	r, ok := s.kept[i]
	if ok {
		s.keptBytes -= s.keptSize[i]
		delete(s.kept, i)
		delete(s.keptSize, i)
	}
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	u := s.plan.units[i]
	return s.st.storedResult(ctx, u, u.Step)
}

// storedResult reads the result of task u, stored under the step key
// step, and checks it is u's.
func (st *storeAccess) storedResult(ctx context.Context, u rollout.RolloutTask, step int) (*RolloutResult, error) {
	var raw json.RawMessage
	err := st.retry(ctx, "read the result of "+u.ID(), func(ctx context.Context) error {
		var err error
		raw, err = st.store.Result(ctx, u.Run, step, u.ID())
		return err
	})
	if err != nil {
		return nil, err
	}
	return decodeStoredResult(u, raw)
}

// decodeStoredResult decodes the stored result raw of task u and checks it
// is u's.
func decodeStoredResult(u rollout.RolloutTask, raw json.RawMessage) (*RolloutResult, error) {
	r, err := decodeResult(raw)
	if err != nil {
		return nil, fmt.Errorf("result of %s in the store: %w", u.ID(), err)
	}
	// The versions may differ: a result stored before a resumed run's
	// restart was sampled with the versions of that time.
	if r.Task.ID() != u.ID() || r.Task.Seed != u.Seed {
		return nil, fmt.Errorf("result of %s in the store is that of task %s (seed %d)", u.ID(), r.Task.ID(), r.Task.Seed)
	}
	return r, nil
}

// storeAccess is the farm's use of its store: every call retried with
// backoff while the store is unreachable, so a store lost mid-run makes
// the run wait instead of losing results.
type storeAccess struct {
	store store.Store
	log   *slog.Logger
	// retries is the run's FailurePolicy.RolloutRetries: an infra result
	// with fewer is stored as a pending retry (see resultKey).
	retries int
	// legacyDraws says the run's draws were started by an mgrpo that kept
	// them under negative step keys: they are read from there too (see
	// stream_store.go).
	legacyDraws atomic.Bool
}

// retry calls fn until it succeeds, fails for good (a missing record, a
// conflict, corrupt data, a closed store, a store unusable until repaired:
// see store.Transient) or ctx ends.
func (a *storeAccess) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	wait := 50 * time.Millisecond
	const maxWait = 5 * time.Second
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !store.Transient(err) {
			if errors.Is(err, store.ErrUnusable) {
				a.log.Error("the store cannot serve the run: stopping", "op", what, "error", err)
				return fmt.Errorf("store: %s: %w (what is stored is kept: repair the store — free disk space, make it writable, give Redis memory or permissions — and continue the run with --resume)", what, err)
			}
			if err != nil {
				return fmt.Errorf("store: %s: %w", what, err)
			}
			if attempt > 1 {
				a.log.Info("store reachable again", "op", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("store: %s: %w (gave up: %w)", what, err, context.Cause(ctx))
		}
		a.log.Warn("store call failed, retrying", "op", what, "attempt", attempt, "retry_in", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("store: %s: %w (gave up: %w)", what, err, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// putResult encodes and stores a result (the first stored for a task
// wins) and returns its stored size.
func (a *storeAccess) putResult(ctx context.Context, r *RolloutResult) (int, error) {
	var putErr error
	size := 0
	err := encodeResult(r, func(raw json.RawMessage) error {
		size = len(raw)
		putErr = a.retry(ctx, "store the result of "+r.Task.ID(), func(ctx context.Context) error {
			return a.store.PutResult(ctx, r.Task.Run, r.Task.Step, a.resultKey(r), raw)
		})
		return putErr
	})
	if err != nil && putErr == nil {
		return 0, fmt.Errorf("encode %s: %w", r.describe(), err)
	}
	return size, err
}

// digests returns the digests of the step's results in the store, by task
// id.
func (a *storeAccess) digests(ctx context.Context, run string, step int) (map[string]resultDigest, error) {
	out := map[string]resultDigest{}
	err := a.retry(ctx, fmt.Sprintf("read the results of step %d", step), func(ctx context.Context) error {
		clear(out)
		return a.store.ScanResults(ctx, run, step, func(id string, raw json.RawMessage) error {
			d, err := decodeDigest(raw)
			if err != nil {
				return fmt.Errorf("result of %s: %w: %w", id, store.ErrCorrupt, err)
			}
			addDigest(out, id, d)
			return nil
		})
	})
	return out, err
}

// pendingRetry ends the store key of an infra result kept with retries
// left (a run stopped in the middle of a rollout's retries), followed by
// its retries so far. The store keeps the first result stored under a
// key, so such a result has a key of its own: the rollout's retry, on
// resume, stores its result under the rollout's id.
const pendingRetry = "#retry-"

// resultKey is the store key of r: its id, or for an infra result with
// retries left its pending-retry key (a final result, r.final, never has
// one).
func (a *storeAccess) resultKey(r *RolloutResult) string {
	if r.infra() && r.Retries < a.retries && !r.final {
		return r.Task.ID() + pendingRetry + strconv.Itoa(r.Retries)
	}
	return r.Task.ID()
}

// addDigest adds the digest of the result stored under key to out, by
// rollout id: a rollout's own result wins over pending retries, of which
// the one with the most retries wins.
func addDigest(out map[string]resultDigest, key string, d resultDigest) {
	id, _, pending := strings.Cut(key, pendingRetry)
	d.pending = pending
	old, ok := out[id]
	switch {
	case !pending:
		out[id] = d
	case !ok, old.Infra && old.Retries < d.Retries:
		if ok && !old.Infra {
			return
		}
		out[id] = d
	}
}

// pendingDigest returns the digest of task u's latest pending retry in the
// store (its retries so far, the causes of its runs), the zero digest when
// none is: a worker taking up a rollout another process left in the middle
// of its retries (a resumed run, a lease that expired) continues its count
// instead of starting it again.
func (a *storeAccess) pendingDigest(ctx context.Context, u rollout.RolloutTask) (resultDigest, error) {
	for n := a.retries - 1; n >= 0; n-- {
		key := u.ID() + pendingRetry + strconv.Itoa(n)
		var raw json.RawMessage
		err := a.retry(ctx, "read the pending retry of "+u.ID(), func(ctx context.Context) error {
			var err error
			raw, err = a.store.Result(ctx, u.Run, u.Step, key)
			return err
		})
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return resultDigest{}, err
		}
		d, err := decodeDigest(raw)
		if err != nil {
			return resultDigest{}, fmt.Errorf("pending retry of %s: %w: %w", u.ID(), store.ErrCorrupt, err)
		}
		d.pending = true
		return d, nil
	}
	return resultDigest{}, nil
}
