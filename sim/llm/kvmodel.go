package llm

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"
)

// kvModel is the engine's KV cache when Config.KVCapacity is set: a running
// sequence holds its prompt and the tokens generated so far; a request is
// admitted only while its prompt fits; when decoding pushes the total over
// the capacity, the engine preempts the most recently admitted sequence, as
// vLLM's scheduler does: it loses its KV, goes back to the waiting queue and,
// readmitted, recomputes its prompt and generated tokens (a prefill: TTFT plus
// Config.RecomputePerToken a token, holding its slot and KV meanwhile) before
// decoding on. Preemptions are counted for
// vllm:num_preemptions_total (SGLang: sglang:num_retracted_requests_total).
// Its fields are guarded by the engine's mu.
type kvModel struct {
	capacity int64
	live     []*ticket // running sequences, in admission order
	freed    chan struct{}
	// preemptions is read by /metrics without the lock.
	preemptions atomic.Int64
}

// kvChunk is how many tokens a sequence decodes between KV checks.
const kvChunk = 8

func newKVModel(capacity int64) *kvModel {
	return &kvModel{capacity: capacity, freed: make(chan struct{})}
}

// admitLocked admits a sequence of tokens if they fit (or nothing runs:
// a prompt larger than the cache still runs alone) and returns its ticket;
// otherwise nil and a channel closed when KV is next freed. e.mu is held.
func (m *kvModel) admitLocked(e *engine, tokens int) (*ticket, <-chan struct{}) {
	if len(m.live) > 0 && e.kvTokens.Load()+int64(tokens) > m.capacity {
		return nil, m.freed
	}
	t := &ticket{e: e, tokens: int64(tokens), abort: e.abort, preempt: make(chan struct{}), held: int64(tokens)}
	m.live = append(m.live, t)
	e.running.Add(1)
	e.kvTokens.Add(int64(tokens))
	return t, nil
}

// freeLocked drops t's KV and wakes the requests waiting for room. e.mu is
// held.
func (m *kvModel) freeLocked(e *engine, t *ticket) {
	if i := slices.Index(m.live, t); i >= 0 {
		m.live = slices.Delete(m.live, i, i+1)
	}
	e.kvTokens.Add(-t.held)
	t.held = 0
	close(m.freed)
	m.freed = make(chan struct{})
}

// release ends a sequence: its KV (none left if it was preempted) and its
// slot.
func (m *kvModel) release(t *ticket) {
	e := t.e
	e.mu.Lock()
	m.freeLocked(e, t)
	e.mu.Unlock()
	e.running.Add(-1)
	<-e.slots
}

// grow adds n decoded tokens to t and preempts, newest first, until the
// cache holds what runs (the oldest sequence is never preempted).
func (m *kvModel) grow(t *ticket, n int) {
	e := t.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(m.live, t) {
		return
	}
	t.held += int64(n)
	e.kvTokens.Add(int64(n))
	for e.kvTokens.Load() > m.capacity && len(m.live) > 1 {
		v := m.live[len(m.live)-1]
		m.freeLocked(e, v)
		close(v.preempt)
		m.preemptions.Add(1)
	}
}

// decode models the generation of n tokens on *tp under the KV model: TTFT,
// then PerToken a token, kvChunk tokens between checks; a preempted sequence
// gives up its slot, waits in the queue to be admitted again with its prompt
// and the tokens it had, and pays their recompute (recomputeTime) before
// decoding on. *tp is the current ticket on return (the caller releases it).
// It returns ctx's error or errAborted as ticket.wait does.
func (s *Server) decode(ctx context.Context, tp **ticket, prompt, n int) error {
	m := s.eng.kv
	done := 0
	first, recompute := true, false
	for {
		t := *tp
		d := time.Duration(0)
		step := 0
		switch {
		case recompute:
			// Like the first prefill, the recompute yields the next token.
			d, recompute = s.recomputeTime(prompt+done), false
			step = min(1, n-done)
		case first:
			d, first = s.cfg.TTFT, false
			step = min(1, n-done)
		default:
			step = min(kvChunk, n-done)
			d = time.Duration(step) * s.cfg.PerToken
		}
		if err := t.waitKV(ctx, d); err != nil {
			if err != errPreempted {
				return err
			}
			t.release()
			nt, err := s.eng.admit(ctx, prompt+done)
			if err != nil {
				*tp = t // released already; release is idempotent
				return err
			}
			*tp, recompute = nt, true
			continue
		}
		done += step
		m.grow(t, step)
		if done >= n {
			return nil
		}
	}
}

// recomputeTime is how long a readmitted sequence of tokens (its prompt and
// what it had generated) takes to rebuild its KV: a prefill of them all.
func (s *Server) recomputeTime(tokens int) time.Duration {
	return s.cfg.TTFT + time.Duration(tokens)*s.cfg.RecomputePerToken
}

// errPreempted reports that the KV model preempted the sequence.
var errPreempted = errors.New("preempted")

// waitKV is wait that also ends when the sequence is preempted.
func (t *ticket) waitKV(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(max(d, 0))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.abort:
		return errAborted
	case <-t.preempt:
		return errPreempted
	case <-timer.C:
		select {
		case <-t.preempt:
			return errPreempted
		default:
			return nil
		}
	}
}

// preemptions returns how many sequences the KV model preempted (0 without
// one).
func (e *engine) preemptions() float64 {
	if e.kv == nil {
		return 0
	}
	return float64(e.kv.preemptions.Load())
}
