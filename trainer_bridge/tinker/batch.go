package tinker

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mgrpo/mgrpo/rollout"
)

// Request limits of forward_backward: the SDK's chunking limits
// (MAX_CHUNK_LEN and MAX_CHUNK_BYTES_COUNT in its training client). The
// SDK estimates a chunk's size; the bridge measures the whole JSON body.
const (
	DefaultMaxDatums = 1024
	DefaultMaxBytes  = 5_000_000
)

// plan is a step's trainable samples and how they are split into
// forward_backward requests. It is a pure function of the batch, the
// loss and the model id, so a replayed step makes the same requests.
type plan struct {
	samples []*rollout.Sample // the trainable samples, in batch order
	short   int               // samples skipped: fewer than two tokens
	masked  int               // samples skipped: no target in the loss mask
	tokens  int               // target tokens sent
	chunks  []span            // requests: samples[lo:hi]
}

type span struct{ lo, hi int }

// fbEnvelope is the constant part of every forward_backward body of a
// plan: what comes after the datums, up to the seq_id.
type fbEnvelope struct {
	prefix []byte // {"forward_backward_input":{"data":[
	middle []byte // ],"loss_fn":…,"loss_fn_config":…},"model_id":…,"seq_id":
}

func newEnvelope(modelID string, loss string, lossConfig map[string]float64) (fbEnvelope, error) {
	lossJSON, err := json.Marshal(loss)
	if err != nil {
		return fbEnvelope{}, err
	}
	idJSON, err := json.Marshal(modelID)
	if err != nil {
		return fbEnvelope{}, err
	}
	m := []byte(`],"loss_fn":`)
	m = append(m, lossJSON...)
	if len(lossConfig) > 0 {
		// encoding/json sorts map keys: the body is deterministic.
		cfg, err := json.Marshal(lossConfig)
		if err != nil {
			return fbEnvelope{}, fmt.Errorf("loss_fn_config: %w", err)
		}
		m = append(m, `,"loss_fn_config":`...)
		m = append(m, cfg...)
	}
	m = append(m, `},"model_id":`...)
	m = append(m, idJSON...)
	m = append(m, `,"seq_id":`...)
	return fbEnvelope{prefix: []byte(`{"forward_backward_input":{"data":[`), middle: m}, nil
}

// body appends the forward_backward body of samples with seq to dst.
func (e fbEnvelope) body(dst []byte, samples []*rollout.Sample, seq int64) []byte {
	dst = append(dst, e.prefix...)
	for i, s := range samples {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendDatum(dst, s)
	}
	return e.closeBody(dst, seq)
}

func (e fbEnvelope) closeBody(dst []byte, seq int64) []byte {
	dst = append(dst, e.middle...)
	dst = strconv.AppendInt(dst, seq, 10)
	return append(dst, '}')
}

// makePlan checks the batch's samples, drops those that cannot train and
// splits the rest into requests of at most maxDatums datums and maxBytes
// bytes of body, in order. A datum too big for a request of its own goes
// alone (the trainer decides whether it takes it). Chunk k's seq_id is
// firstSeq+k; the size check uses it, so the plan depends on firstSeq's
// digit count only, and a replay (same batch, same firstSeq) makes the
// same plan. emit, when not nil, receives every body as it is completed
// (the buffer is reused: emit must not keep it).
func makePlan(samples []rollout.Sample, env fbEnvelope, firstSeq int64, maxDatums, maxBytes int, emit func(k int, body []byte) error) (plan, error) {
	p, err := selectSamples(samples)
	if err != nil {
		return plan{}, err
	}
	return p.chunkJSON(env, firstSeq, maxDatums, maxBytes, emit)
}

// selectSamples checks the batch's samples and keeps those that train,
// counting the others by reason.
func selectSamples(samples []rollout.Sample) (plan, error) {
	var p plan
	for i := range samples {
		s := &samples[i]
		ok, reason, err := checkSample(s)
		if err != nil {
			return plan{}, fmt.Errorf("sample %d (query %s, rollout %d): %w", i, s.QueryID, s.Rollout, err)
		}
		if !ok {
			if reason == skipShort {
				p.short++
			} else {
				p.masked++
			}
			continue
		}
		p.samples = append(p.samples, s)
		p.tokens += len(s.InputIDs) - 1
	}
	return p, nil
}

// chunkJSON splits p's samples into JSON forward_backward requests (see
// makePlan).
func (p plan) chunkJSON(env fbEnvelope, firstSeq int64, maxDatums, maxBytes int, emit func(k int, body []byte) error) (plan, error) {
	var buf []byte
	lo := 0
	flush := func(hi int) error {
		seq := firstSeq + int64(len(p.chunks))
		p.chunks = append(p.chunks, span{lo, hi})
		lo = hi
		if emit == nil {
			return nil
		}
		return emit(len(p.chunks)-1, env.closeBody(buf, seq))
	}
	for i, s := range p.samples {
		if i == lo {
			buf = append(buf[:0], env.prefix...)
		}
		seq := firstSeq + int64(len(p.chunks))
		tail := len(env.middle) + len(strconv.FormatInt(seq, 10)) + 1
		mark := len(buf)
		if i > lo {
			buf = append(buf, ',')
		}
		buf = appendDatum(buf, s)
		if i > lo && (i-lo >= maxDatums || len(buf)+tail > maxBytes) {
			// Datum i does not fit: close the request before it and
			// start the next one with it.
			buf = buf[:mark]
			if err := flush(i); err != nil {
				return plan{}, err
			}
			buf = append(buf[:0], env.prefix...)
			buf = appendDatum(buf, s)
		}
	}
	if lo < len(p.samples) {
		if err := flush(len(p.samples)); err != nil {
			return plan{}, err
		}
	}
	return p, nil
}
