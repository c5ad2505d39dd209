package store

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
)

// WriteBehindBound is how much a WriteBehind store may hold that its
// backend does not have yet: what a crash of the process can lose.
type WriteBehindBound struct {
	// Writes is the most writes held; a write past it applies those held
	// first.
	Writes int
	// Bytes is the most bytes of values held (a single larger write is
	// held alone).
	Bytes int
	// Delay is the longest a write is held before it is applied (plus the
	// time its batch takes to apply).
	Delay time.Duration
}

// DefaultWriteBehind is the bound of the run's store in mgrpo: a crash
// loses at most the last second of results, draws' results, cache and
// recording entries, and at most 256 of them (16 MiB), the same order as a
// Redis with appendfsync everysec. Each lost result is a rollout a resumed
// run does again with its seed.
var DefaultWriteBehind = WriteBehindBound{Writes: 256, Bytes: 16 << 20, Delay: time.Second}

// WriteBehind is a Store that takes the writes made once per rollout or
// per call — PutResult, PutDrawResult and Set — without waiting for the
// backend, and applies them several at a time (one Batcher call: one
// SQLite transaction, one Redis round trip), within its bound.
//
// Every other call applies the writes held first, so the backend sees all
// writes in the order they were made: what it holds after a crash is what
// the store held at an earlier moment, never a later write without an
// earlier one (a result is never durable without the recording entries
// written before it, a task never completed without its result). Reads of
// results apply the writes held first; Get answers from them.
//
// A write whose batch failed stays held and is applied again with the
// next batch (the writes are idempotent); the next call that applies them
// returns the error, so a caller's retries see a store that fails.
type WriteBehind struct {
	inner Store
	bound WriteBehindBound

	// apply is held while a batch is applied, so batches reach the
	// backend in order.
	apply sync.Mutex

	mu      sync.Mutex
	pending []Write
	bytes   int
	// cached are the pending cache entries by key with the sequence
	// number of their latest write, for Get.
	cached map[string]cachedEntry
	seq    uint64
	timer  *time.Timer
	closed bool

	batches, writes atomic.Int64
	closeOnce       sync.Once
	closeErr        error
}

type cachedEntry struct {
	value   []byte
	seq     uint64
	expires time.Time
}

var _ Store = (*WriteBehind)(nil)

// NewWriteBehind returns st behind a write-behind buffer of bound (a zero
// field: DefaultWriteBehind's). Closing it applies what it holds and
// closes st.
func NewWriteBehind(st Store, bound WriteBehindBound) *WriteBehind {
	if bound.Writes <= 0 {
		bound.Writes = DefaultWriteBehind.Writes
	}
	if bound.Bytes <= 0 {
		bound.Bytes = DefaultWriteBehind.Bytes
	}
	if bound.Delay <= 0 {
		bound.Delay = DefaultWriteBehind.Delay
	}
	return &WriteBehind{inner: st, bound: bound, cached: map[string]cachedEntry{}}
}

// Unwrap returns the backend.
func (w *WriteBehind) Unwrap() Store { return w.inner }

// WriteBehindStats count what a WriteBehind applied.
type WriteBehindStats struct {
	// Writes were applied in Batches.
	Writes, Batches int64
	// Pending writes are held now.
	Pending int
}

// Stats returns what w applied so far and holds now.
func (w *WriteBehind) Stats() WriteBehindStats {
	w.mu.Lock()
	n := len(w.pending)
	w.mu.Unlock()
	return WriteBehindStats{Writes: w.writes.Load(), Batches: w.batches.Load(), Pending: n}
}

// hold takes wr, applying the writes held first when it would pass the
// bound.
func (w *WriteBehind) hold(ctx context.Context, wr Write) error {
	// The caller's bytes may be reused once it returns.
	wr.Value = bytes.Clone(wr.Value)
	if wr.Value == nil {
		wr.Value = json.RawMessage{}
	}
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return ErrClosed
		}
		full := len(w.pending) > 0 && (len(w.pending) >= w.bound.Writes || w.bytes+len(wr.Value) > w.bound.Bytes)
		if !full {
			break
		}
		w.mu.Unlock()
		if err := w.Flush(ctx); err != nil {
			return err
		}
	}
	defer w.mu.Unlock()
	w.seq++
	w.pending = append(w.pending, wr)
	w.bytes += len(wr.Value)
	if wr.Kind == WriteCache {
		ttl := wr.TTL
		if ttl <= 0 {
			ttl = DefaultCacheTTL
		}
		w.cached[wr.TaskID] = cachedEntry{value: wr.Value, seq: w.seq, expires: time.Now().Add(ttl)}
	}
	w.armLocked()
	return nil
}

// armLocked starts the timer that applies the writes held, unless it
// runs. w.mu is held.
func (w *WriteBehind) armLocked() {
	if w.timer == nil && len(w.pending) > 0 && !w.closed {
		w.timer = time.AfterFunc(w.bound.Delay, w.flushLater)
	}
}

// flushLater applies the writes held when their delay is up. A failed
// batch stays held and is tried again after another delay.
func (w *WriteBehind) flushLater() {
	w.mu.Lock()
	w.timer = nil
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if w.Flush(ctx) != nil {
		w.mu.Lock()
		w.armLocked()
		w.mu.Unlock()
	}
}

// Flush applies the writes held, in the order they were made, and returns
// once the backend has them (or the batch's error; they stay held).
func (w *WriteBehind) Flush(ctx context.Context) error {
	w.apply.Lock()
	defer w.apply.Unlock()
	w.mu.Lock()
	batch, last := w.pending, w.seq
	w.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := ApplyWrites(ctx, w.inner, batch); err != nil {
		return err
	}
	w.batches.Add(1)
	w.writes.Add(int64(len(batch)))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wr := range batch {
		w.bytes -= len(wr.Value)
		if e, ok := w.cached[wr.TaskID]; ok && wr.Kind == WriteCache && e.seq <= last {
			delete(w.cached, wr.TaskID)
		}
	}
	// Writes taken while the batch applied stay, in order.
	w.pending = slices.Delete(w.pending, 0, len(batch))
	w.armLocked()
	return nil
}

// Close applies the writes held and closes the backend; it is idempotent.
// A batch that fails here is lost (a resumed run redoes its rollouts), and
// its error returned.
func (w *WriteBehind) Close() error {
	w.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		flushErr := w.Flush(ctx)
		w.mu.Lock()
		w.closed = true
		if w.timer != nil {
			w.timer.Stop()
			w.timer = nil
		}
		w.mu.Unlock()
		// A write taken between the flush and closing.
		if err := w.Flush(ctx); flushErr == nil {
			flushErr = err
		}
		w.closeErr = w.inner.Close()
		if flushErr != nil {
			w.closeErr = flushErr
		}
	})
	return w.closeErr
}

// The writes held.

// PutResult holds the result (see WriteBehind).
func (w *WriteBehind) PutResult(ctx context.Context, run string, step int, taskID string, result json.RawMessage) error {
	return w.hold(ctx, Write{Kind: WriteResult, Run: run, Key: step, TaskID: taskID, Value: result})
}

// PutDrawResult holds the draw's result (see WriteBehind).
func (w *WriteBehind) PutDrawResult(ctx context.Context, run string, n int, taskID string, result json.RawMessage) error {
	return w.hold(ctx, Write{Kind: WriteDrawResult, Run: run, Key: n, TaskID: taskID, Value: result})
}

// Set holds the cache entry (see WriteBehind).
func (w *WriteBehind) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return w.hold(ctx, Write{Kind: WriteCache, TaskID: key, Value: value, TTL: ttl})
}

// Get answers from the cache entries held, else from the backend. (The
// backend counts an entry's TTL from when its batch is applied, up to the
// bound's Delay later than Set.)
func (w *WriteBehind) Get(ctx context.Context, key string) ([]byte, bool, error) {
	w.mu.Lock()
	e, ok := w.cached[key]
	w.mu.Unlock()
	switch {
	case ok && time.Now().Before(e.expires):
		return bytes.Clone(e.value), true, nil
	case ok:
		return nil, false, nil
	}
	return w.inner.Get(ctx, key)
}

// Every other write, and every read of results, applies the writes held
// first; the other reads do not need to (what they read is never held).

func (w *WriteBehind) CreateRun(ctx context.Context, r RunRecord) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.CreateRun(ctx, r)
}

func (w *WriteBehind) Run(ctx context.Context, id string) (RunRecord, error) {
	return w.inner.Run(ctx, id)
}

func (w *WriteBehind) RunIDs(ctx context.Context) ([]string, error) {
	return w.inner.RunIDs(ctx)
}

func (w *WriteBehind) PutStep(ctx context.Context, run string, s StepRecord) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.PutStep(ctx, run, s)
}

func (w *WriteBehind) Steps(ctx context.Context, run string) ([]StepRecord, error) {
	return w.inner.Steps(ctx, run)
}

func (w *WriteBehind) PutStepFile(ctx context.Context, run string, step int, name string, data []byte) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.PutStepFile(ctx, run, step, name, data)
}

func (w *WriteBehind) StepFile(ctx context.Context, run string, step int, name string) ([]byte, error) {
	return w.inner.StepFile(ctx, run, step, name)
}

func (w *WriteBehind) PutStats(ctx context.Context, run string, step int, stats []rollout.QueryStats) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.PutStats(ctx, run, step, stats)
}

func (w *WriteBehind) StepStats(ctx context.Context, run string, step int) ([]rollout.QueryStats, error) {
	return w.inner.StepStats(ctx, run, step)
}

func (w *WriteBehind) Enqueue(ctx context.Context, run string, tasks []rollout.RolloutTask) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.Enqueue(ctx, run, tasks)
}

func (w *WriteBehind) Claim(ctx context.Context, r ClaimRequest) ([]Lease, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.inner.Claim(ctx, r)
}

func (w *WriteBehind) Extend(ctx context.Context, l Lease, d time.Duration) (Lease, error) {
	if err := w.Flush(ctx); err != nil {
		return Lease{}, err
	}
	return w.inner.Extend(ctx, l, d)
}

func (w *WriteBehind) Complete(ctx context.Context, l Lease) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.Complete(ctx, l)
}

func (w *WriteBehind) Counts(ctx context.Context, run string) (QueueCounts, error) {
	return w.inner.Counts(ctx, run)
}

func (w *WriteBehind) DeadLetters(ctx context.Context, run string) ([]DeadTask, error) {
	return w.inner.DeadLetters(ctx, run)
}

func (w *WriteBehind) Result(ctx context.Context, run string, step int, taskID string) (json.RawMessage, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.inner.Result(ctx, run, step, taskID)
}

func (w *WriteBehind) ScanResults(ctx context.Context, run string, step int, fn func(taskID string, result json.RawMessage) error) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.ScanResults(ctx, run, step, fn)
}

func (w *WriteBehind) CountResults(ctx context.Context, run string, step int) (int, error) {
	if err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return w.inner.CountResults(ctx, run, step)
}

func (w *WriteBehind) DeleteResults(ctx context.Context, run string, step int) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.DeleteResults(ctx, run, step)
}

func (w *WriteBehind) PutDraw(ctx context.Context, run string, n int, record []byte) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.PutDraw(ctx, run, n, record)
}

func (w *WriteBehind) Draw(ctx context.Context, run string, n int) ([]byte, error) {
	return w.inner.Draw(ctx, run, n)
}

func (w *WriteBehind) DrawResult(ctx context.Context, run string, n int, taskID string) (json.RawMessage, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.inner.DrawResult(ctx, run, n, taskID)
}

func (w *WriteBehind) ScanDrawResults(ctx context.Context, run string, n int, fn func(taskID string, result json.RawMessage) error) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.ScanDrawResults(ctx, run, n, fn)
}

func (w *WriteBehind) DeleteDrawResults(ctx context.Context, run string, n int) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.DeleteDrawResults(ctx, run, n)
}

func (w *WriteBehind) SetPolicyVersion(ctx context.Context, run, role string, v int64) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.SetPolicyVersion(ctx, run, role, v)
}

func (w *WriteBehind) PolicyVersion(ctx context.Context, run, role string) (int64, error) {
	return w.inner.PolicyVersion(ctx, run, role)
}

func (w *WriteBehind) LockRun(ctx context.Context, run string, o Owner, lease time.Duration) (Owner, error) {
	if err := w.Flush(ctx); err != nil {
		return Owner{}, err
	}
	return w.inner.LockRun(ctx, run, o, lease)
}

func (w *WriteBehind) UnlockRun(ctx context.Context, run string, o Owner) error {
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.inner.UnlockRun(ctx, run, o)
}
