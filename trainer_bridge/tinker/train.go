package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strings"

	"github.com/mgrpo/mgrpo/internal/httpretry"
	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// Metrics the bridge adds to the trainer's.
const (
	MetricDatums         = "mgrpo/datums"          // samples sent
	MetricTokens         = "mgrpo/target_tokens"   // target tokens sent
	MetricRequests       = "mgrpo/fb_requests"     // forward_backward requests of the step
	MetricSkippedShort   = "mgrpo/skipped_short"   // samples of fewer than two tokens
	MetricSkippedNoLoss  = "mgrpo/skipped_no_loss" // samples with no target in the loss mask
	MetricNothingToTrain = "mgrpo/nothing_to_train"
)

// fbOutput is the part of the SDK's ForwardBackwardOutput the bridge
// reads.
type fbOutput struct {
	Metrics       map[string]float64 `json:"metrics"`
	LossFnOutputs []json.RawMessage  `json:"loss_fn_outputs"`
}

// Train runs one step on b: forward_backward over the batch in requests
// of at most Config.MaxDatums datums and Config.MaxBytes bytes, then,
// once every one succeeded, optim_step and save_weights_for_sampler. The
// requests carry seq_ids State.SeqID+1, +2, … and bodies that depend
// only on b and the state, so calling Train again with the same batch
// and state (after an error, or after a restart with the state restored)
// sends the same requests, which the server answers with the original
// futures: nothing is trained twice. A batch whose step is the last one
// trained gets the saved result back without a request; an earlier step
// is an error.
//
// A batch with nothing to train (every sample shorter than two tokens or
// without loss) sends nothing and returns the previous weights with
// Version = b.PolicyVersion and the MetricNothingToTrain metric.
func (t *Trainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	t.mu.Lock()
	started, st := t.started, t.st
	t.mu.Unlock()
	if !started {
		return trainerbridge.StepResult{}, errors.New("tinker: train before start")
	}
	if t.opts.Role != "" && b.Role != "" && b.Role != t.opts.Role {
		return trainerbridge.StepResult{}, fmt.Errorf("tinker: a %s batch for the %s trainer", b.Role, t.opts.Role)
	}
	if st.StepsTrained > 0 {
		switch {
		case b.Step == st.LastStep:
			// Trained before (a retried step, a resumed run): the same
			// answer, nothing sent.
			t.log.Info("tinker: step trained before; answered from the saved state", "step", b.Step, "version", st.Version)
			return trainerbridge.StepResult{Weights: st.Weights, Version: st.Version, Metrics: maps.Clone(st.Metrics)}, nil
		case b.Step < st.LastStep:
			return trainerbridge.StepResult{}, fmt.Errorf("tinker: step %d: step %d is trained already", b.Step, st.LastStep)
		}
	}
	where := fmt.Sprintf("tinker %s: step %d", t.where, b.Step)

	t.mu.Lock()
	asJSON := t.jsonWire
	t.mu.Unlock()
	seq := st.SeqID
	p, refs, err := t.sendForwardBackward(ctx, b, st, asJSON)
	if errors.Is(err, errNoProto) {
		// The server refused the protobuf body (415) before taking its
		// seq_id: send the step as JSON, and every later one.
		t.log.Warn("tinker server refused a protobuf forward_backward; sending JSON from now on", "err", err)
		t.mu.Lock()
		t.jsonWire, asJSON = true, true
		t.mu.Unlock()
		p, refs, err = t.sendForwardBackward(ctx, b, st, true)
	}
	if err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("%s: %w", where, err)
	}
	metrics := map[string]float64{
		MetricDatums:        float64(len(p.samples)),
		MetricTokens:        float64(p.tokens),
		MetricRequests:      float64(len(p.chunks)),
		MetricSkippedShort:  float64(p.short),
		MetricSkippedNoLoss: float64(p.masked),
	}
	if len(p.samples) == 0 {
		metrics[MetricNothingToTrain] = 1
		t.mu.Lock()
		t.st.StepsTrained++
		t.st.LastStep = b.Step
		t.st.Version = b.PolicyVersion
		t.st.Metrics = maps.Clone(metrics)
		weights := t.st.Weights
		t.mu.Unlock()
		return trainerbridge.StepResult{Weights: weights, Version: b.PolicyVersion, Metrics: metrics}, nil
	}

	outs := make([]fbOutput, len(p.chunks))
	for k, ref := range refs {
		sp := p.chunks[k]
		chunkSeq := seq + 1 + int64(k)
		o := reqOpts{accept: acceptProto}
		if asJSON {
			o = reqOpts{}
		}
		err := t.c.waitOpts(ctx, "forward_backward", string(ref.RequestID), o, &outs[k])
		for resubmit := 0; errors.Is(err, errResubmit); resubmit++ {
			if resubmit >= t.c.retries {
				err = fmt.Errorf("%w: forward_backward: future expired %d times", trainerbridge.ErrUnavailable, resubmit+1)
				break
			}
			// The future is gone: send the request again, re-encoded
			// (encoding is deterministic, so it is the same body).
			var body []byte
			body, o, err = t.fbBody(st, p.samples[sp.lo:sp.hi], chunkSeq, asJSON)
			if err != nil {
				break
			}
			var ref futureRef
			if err = t.c.callOpts(ctx, http.MethodPost, "forward_backward", body, o, &ref); err != nil {
				break
			}
			err = t.c.waitOpts(ctx, "forward_backward", string(ref.RequestID), o, &outs[k])
		}
		if err != nil {
			return trainerbridge.StepResult{}, fmt.Errorf("%s: forward_backward %d of %d (seq_id %d): %w", where, k+1, len(refs), chunkSeq, err)
		}
	}
	seq += int64(len(p.chunks))

	seq++
	optBody, err := json.Marshal(map[string]any{
		"adam_params": t.adam,
		"model_id":    st.ModelID,
		"seq_id":      seq,
		"type":        "optim_step",
	})
	if err != nil {
		return trainerbridge.StepResult{}, err
	}
	var opt struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	if _, err := t.c.submit(ctx, "optim_step", optBody, &opt); err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("%s: optim_step (seq_id %d): %w", where, seq, err)
	}

	name := checkpointName(b.IdempotencyKey())
	statePath := ""
	if t.server.found {
		// The SDK's save_state: what a resumed run loads into a fresh
		// model. Before the sampler save, which ends the step.
		seq++
		stateBody, err := json.Marshal(map[string]any{"model_id": st.ModelID, "path": name, "seq_id": seq, "type": "save_weights"})
		if err != nil {
			return trainerbridge.StepResult{}, err
		}
		var state struct {
			Path string `json:"path"`
		}
		if _, err := t.c.submit(ctx, "save_weights", stateBody, &state); err != nil {
			return trainerbridge.StepResult{}, fmt.Errorf("%s: save_weights (seq_id %d): %w", where, seq, err)
		}
		if state.Path == "" {
			return trainerbridge.StepResult{}, fmt.Errorf("%s: %w: save_weights gave no path", where, trainerbridge.ErrRejected)
		}
		statePath = state.Path
	}

	seq++
	saveBody, err := json.Marshal(map[string]any{
		"model_id": st.ModelID,
		"path":     name,
		"seq_id":   seq,
		"type":     "save_weights_for_sampler",
	})
	if err != nil {
		return trainerbridge.StepResult{}, err
	}
	var saved struct {
		Path string `json:"path"`
	}
	_, err = t.c.submit(ctx, "save_weights_for_sampler", saveBody, &saved)
	var se *httpretry.StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict && strings.Contains(se.Message, "already exists") {
		// SkyRL records the checkpoint before it looks the seq_id up, so
		// a replayed save is refused as a duplicate name. The name is
		// this batch's alone: the weights are those saved the first time,
		// at SkyRL's path for them.
		saved.Path, err = "tinker://"+st.ModelID+"/sampler_weights/"+name, nil
	}
	if err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("%s: save_weights_for_sampler (seq_id %d): %w", where, seq, err)
	}
	if saved.Path == "" {
		return trainerbridge.StepResult{}, fmt.Errorf("%s: %w: save_weights_for_sampler gave no path", where, trainerbridge.ErrRejected)
	}

	fbm := combineMetrics(outs, p.chunks)
	for k, v := range fbm {
		metrics[k] = v
	}
	for k, v := range opt.Metrics {
		if _, taken := metrics[k]; taken {
			k = "optim_step/" + k
		}
		metrics[k] = v
	}
	res := trainerbridge.StepResult{Weights: saved.Path, Version: b.PolicyVersion + 1, Metrics: metrics}
	t.mu.Lock()
	t.st.SeqID = seq
	t.st.StatePath = statePath
	t.st.StepsTrained++
	t.st.LastStep = b.Step
	t.st.Weights = res.Weights
	t.st.Version = res.Version
	t.st.Metrics = maps.Clone(metrics)
	t.mu.Unlock()
	return res, nil
}

// errNoProto is a protobuf forward_backward refused as such (415).
var errNoProto = errors.New("protobuf body refused")

// fbBody is the forward_backward body of samples with seq, and its media
// types: protobuf, or JSON when asJSON.
func (t *Trainer) fbBody(st State, samples []*rollout.Sample, seq int64, asJSON bool) ([]byte, reqOpts, error) {
	if asJSON {
		env, err := newEnvelope(st.ModelID, t.loss, t.lossConfig)
		return env.body(nil, samples, seq), reqOpts{}, err
	}
	body, err := protoEnvelope{modelID: st.ModelID, loss: t.loss, config: t.lossConfig}.body(samples, seq)
	return body, reqOpts{contentType: mediaProto, accept: acceptProto}, err
}

// sendForwardBackward plans b's forward_backward requests and sends each
// as soon as it is encoded (so the trainer works while the rest is
// encoded and one body is held at a time), returning their futures. A
// protobuf request refused with 415 is errNoProto.
func (t *Trainer) sendForwardBackward(ctx context.Context, b trainerbridge.Batch, st State, asJSON bool) (plan, []futureRef, error) {
	var refs []futureRef
	o := reqOpts{contentType: mediaProto, accept: acceptProto}
	if asJSON {
		o = reqOpts{}
	}
	emit := func(k int, body []byte) error {
		var ref futureRef
		err := t.c.callOpts(ctx, http.MethodPost, "forward_backward", body, o, &ref)
		if !asJSON && k == 0 && httpretry.Code(err) == http.StatusUnsupportedMediaType {
			return fmt.Errorf("%w: %w", errNoProto, err)
		}
		if err != nil {
			return err
		}
		if ref.RequestID == "" {
			return fmt.Errorf("%w: forward_backward: answer without request_id", trainerbridge.ErrRejected)
		}
		refs = append(refs, ref)
		return nil
	}
	p, err := selectSamples(b.Samples)
	if err != nil {
		return plan{}, nil, err
	}
	if asJSON {
		env, err := newEnvelope(st.ModelID, t.loss, t.lossConfig)
		if err != nil {
			return plan{}, nil, err
		}
		p, err = p.chunkJSON(env, st.SeqID+1, t.maxDatums, t.maxBytes, emit)
		return p, refs, err
	}
	p, err = p.chunkProto(protoEnvelope{modelID: st.ModelID, loss: t.loss, config: t.lossConfig}, st.SeqID+1, t.maxDatums, t.maxBytes, emit)
	return p, refs, err
}

// combineMetrics folds the requests' forward_backward metrics into one
// set by the reduction their names end in, as the SDK does: ":sum" adds,
// ":mean" averages weighted by the request's datums, ":min" and ":max"
// keep the extreme; any other name keeps the first request's value.
func combineMetrics(outs []fbOutput, chunks []span) map[string]float64 {
	m := map[string]float64{}
	weight := map[string]float64{}
	for k, o := range outs {
		w := float64(chunks[k].hi - chunks[k].lo)
		for name, v := range o.Metrics {
			old, seen := m[name]
			switch {
			case strings.HasSuffix(name, ":sum"):
				m[name] = old + v
			case strings.HasSuffix(name, ":mean"):
				m[name] = old + v*w
				weight[name] += w
			case strings.HasSuffix(name, ":min"):
				if !seen {
					old = math.Inf(1)
				}
				m[name] = math.Min(old, v)
			case strings.HasSuffix(name, ":max"):
				if !seen {
					old = math.Inf(-1)
				}
				m[name] = math.Max(old, v)
			default:
				if !seen {
					m[name] = v
				}
			}
		}
	}
	for name, w := range weight {
		if w > 0 {
			m[name] /= w
		}
	}
	return m
}
