package llm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errAborted reports that a running request was aborted by POST /pause
// (mode abort); the handlers turn it into finish_reason "abort".
var errAborted = errors.New("request aborted")

// engine models the inference engine's scheduler: a fixed number of sequence
// slots, a waiting queue in front of them, and a gate that POST /pause and
// POST /sleep close. It is safe for concurrent use.
type engine struct {
	slots    chan struct{}
	capacity int64 // KV capacity in tokens: slots × max model length

	running  atomic.Int64
	waiting  atomic.Int64
	kvTokens atomic.Int64

	// kv is the KV-cache model (kvmodel.go), nil unless Config.KVCapacity
	// is set: then a sequence holds its prompt and generated tokens and the
	// engine preempts when they exceed the capacity.
	kv *kvModel

	mu       sync.Mutex
	gate     chan struct{} // closed while generation may proceed
	gateOpen bool
	paused   bool
	sleep    int           // sleep level, 0 when awake
	abort    chan struct{} // closed to abort the requests running now
}

func newEngine(slots, maxModelLen, kvCapacity int) *engine {
	e := &engine{
		slots:    make(chan struct{}, slots),
		capacity: int64(slots) * int64(maxModelLen),
		gate:     make(chan struct{}),
		abort:    make(chan struct{}),
	}
	if kvCapacity > 0 {
		e.capacity = int64(kvCapacity)
		e.kv = newKVModel(int64(kvCapacity))
	}
	close(e.gate)
	e.gateOpen = true
	return e
}

// ticket is one admitted sequence; release must be called exactly once.
type ticket struct {
	e      *engine
	tokens int64
	abort  <-chan struct{}
	once   sync.Once
	// preempt is closed when the KV model preempts the sequence (nil
	// without one); held is its KV tokens, guarded by e.mu.
	preempt chan struct{}
	held    int64
}

// admit waits until the engine is neither paused nor asleep and a slot is
// free, then occupies the slot with tokens of KV cache. It returns ctx's
// error when the client goes away first.
func (e *engine) admit(ctx context.Context, tokens int) (*ticket, error) {
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	for {
		e.mu.Lock()
		gate := e.gate
		e.mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case e.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		e.mu.Lock()
		if !e.gateOpen {
			// Paused between the gate and the slot: give the slot back
			// and wait for the resume like every other queued request.
			e.mu.Unlock()
			<-e.slots
			continue
		}
		if e.kv != nil {
			t, freed := e.kv.admitLocked(e, tokens)
			if t == nil {
				// No KV room: give the slot back until a sequence frees some.
				e.mu.Unlock()
				<-e.slots
				select {
				case <-freed:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				continue
			}
			e.mu.Unlock()
			return t, nil
		}
		abort := e.abort
		e.running.Add(1)
		e.kvTokens.Add(int64(tokens))
		e.mu.Unlock()
		return &ticket{e: e, tokens: int64(tokens), abort: abort}, nil
	}
}

// release frees the ticket's slot and KV tokens. It is idempotent.
func (t *ticket) release() {
	t.once.Do(func() {
		if t.e.kv != nil {
			t.e.kv.release(t)
			return
		}
		t.e.kvTokens.Add(-t.tokens)
		t.e.running.Add(-1)
		<-t.e.slots
	})
}

// wait models d of compute time. It returns ctx's error when the client goes
// away, errAborted when the engine aborts running requests, nil otherwise.
func (t *ticket) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		select {
		case <-t.abort:
			return errAborted
		case <-ctx.Done():
			return ctx.Err()
		default:
			return nil
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.abort:
		return errAborted
	case <-timer.C:
		return nil
	}
}

// setGateLocked opens or closes the admission gate; e.mu must be held.
func (e *engine) setGateLocked() {
	open := !e.paused && e.sleep == 0
	switch {
	case open && !e.gateOpen:
		close(e.gate)
		e.gateOpen = true
	case !open && e.gateOpen:
		e.gate = make(chan struct{})
		e.gateOpen = false
	}
}

// abortRunning aborts the requests running now; requests admitted later
// run normally.
func (e *engine) abortRunning() {
	e.mu.Lock()
	close(e.abort)
	e.abort = make(chan struct{})
	e.mu.Unlock()
}

// pause stops admitting requests. Mode "abort" aborts the running ones,
// "wait" returns once they have finished (or ctx ends), "keep" leaves them
// running.
func (e *engine) pause(ctx context.Context, mode string) error {
	e.mu.Lock()
	e.paused = true
	e.setGateLocked()
	if mode == "abort" {
		close(e.abort)
		e.abort = make(chan struct{})
	}
	e.mu.Unlock()
	if mode != "wait" {
		return nil
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for e.running.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// resume reopens admission after pause.
func (e *engine) resume() {
	e.mu.Lock()
	e.paused = false
	e.setGateLocked()
	e.mu.Unlock()
}

// isPaused reports whether the engine is paused.
func (e *engine) isPaused() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.paused
}

// setSleep puts the engine to sleep at level (>0) or wakes it (0).
func (e *engine) setSleep(level int) {
	e.mu.Lock()
	e.sleep = level
	e.setGateLocked()
	e.mu.Unlock()
}

// sleeping reports whether the engine sleeps.
func (e *engine) sleeping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sleep > 0
}

// kvUsage returns the fraction of KV capacity held by running sequences.
func (e *engine) kvUsage() float64 {
	if e.capacity == 0 {
		return 0
	}
	return float64(e.kvTokens.Load()) / float64(e.capacity)
}
