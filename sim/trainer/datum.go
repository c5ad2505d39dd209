package trainer

import (
	"fmt"
	"math"
	"net/http"
)

// datum is one parsed, checked training sequence. seq is the model input's
// tokens plus the last target: target j is seq[j+1], and weights, sampler
// (the sampler's logprobs) and advantages are indexed by target.
type datum struct {
	seq        []int
	weights    []float64
	sampler    []float64
	advantages []float64
}

// mask returns the positions of seq that carry a loss: position j+1 for
// every target j of nonzero weight.
func (d datum) mask() []bool {
	m := make([]bool, len(d.seq))
	for j, w := range d.weights {
		m[j+1] = w != 0
	}
	return m
}

// loss functions served.
const (
	lossImportanceSampling = "importance_sampling"
	lossPPO                = "ppo"
	lossCrossEntropy       = "cross_entropy"
)

// parseData checks the datums of a forward or forward_backward request
// against the loss, and with pol's Check when it is a Checker: every error
// names the datum and the field.
func parseData(in []wireDatum, loss string, pol Policy) ([]datum, *httpError) {
	if len(in) == 0 {
		return nil, errorf(http.StatusBadRequest, "data: no datums")
	}
	needRL := loss == lossImportanceSampling || loss == lossPPO
	out := make([]datum, len(in))
	for i, w := range in {
		d, err := parseDatum(w, needRL)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "datum %d: %v", i, err)
		}
		if c, ok := pol.(Checker); ok {
			if err := c.Check(d.seq, d.mask()); err != nil {
				return nil, errorf(http.StatusBadRequest, "datum %d: model_input and loss_fn_inputs.weights: %v", i, err)
			}
		}
		out[i] = d
	}
	return out, nil
}

func parseDatum(w wireDatum, needRL bool) (datum, error) {
	var tokens []int
	for c, ch := range w.ModelInput.Chunks {
		if ch.Type != "" && ch.Type != "encoded_text" {
			return datum{}, fmt.Errorf("model_input.chunks[%d].type %q: only encoded_text is served", c, ch.Type)
		}
		for k, t := range ch.Tokens {
			if t < 0 || t > math.MaxInt32 {
				return datum{}, fmt.Errorf("model_input.chunks[%d].tokens[%d] = %d: not a token id", c, k, t)
			}
			tokens = append(tokens, int(t))
		}
	}
	n := len(tokens)
	if n == 0 {
		return datum{}, fmt.Errorf("model_input: no tokens")
	}
	targets, err := tensor(w.LossFnInputs, "target_tokens", "int64", n, true)
	if err != nil {
		return datum{}, err
	}
	d := datum{seq: make([]int, n+1)}
	copy(d.seq, tokens)
	for j, t := range targets {
		if t != math.Trunc(t) || t < 0 || t > math.MaxInt32 {
			return datum{}, fmt.Errorf("loss_fn_inputs.target_tokens[%d] = %v: not a token id", j, t)
		}
		if j+1 < n && int(t) != tokens[j+1] {
			return datum{}, fmt.Errorf("loss_fn_inputs.target_tokens[%d] = %d but model_input token %d is %d: targets misaligned (target j must be input token j+1)", j, int(t), j+1, tokens[j+1])
		}
	}
	d.seq[n] = int(targets[n-1])
	if d.weights, err = tensor(w.LossFnInputs, "weights", "float32", n, false); err != nil {
		return datum{}, err
	}
	if d.sampler, err = tensor(w.LossFnInputs, "logprobs", "float32", n, needRL); err != nil {
		return datum{}, err
	}
	if d.advantages, err = tensor(w.LossFnInputs, "advantages", "float32", n, needRL); err != nil {
		return datum{}, err
	}
	if d.weights == nil {
		// A datum without weights (the cookbook's RL datums have none)
		// trains where it has an advantage; without advantages (a
		// cross_entropy datum), on every target.
		d.weights = make([]float64, n)
		for j := range d.weights {
			if d.advantages == nil || d.advantages[j] != 0 {
				d.weights[j] = 1
			}
		}
	}
	return d, nil
}

// tensor returns loss_fn_inputs[name]'s data after checking its dtype,
// shape and length (n), and that every value is finite; nil when absent
// and not required.
func tensor(inputs map[string]*tensorData, name, dtype string, n int, required bool) ([]float64, error) {
	t := inputs[name]
	if t == nil {
		if required {
			return nil, fmt.Errorf("loss_fn_inputs.%s: missing", name)
		}
		return nil, nil
	}
	if t.Dtype != dtype {
		return nil, fmt.Errorf("loss_fn_inputs.%s.dtype %q: want %q", name, t.Dtype, dtype)
	}
	if len(t.Data) != n {
		return nil, fmt.Errorf("loss_fn_inputs.%s: %d values for %d input tokens (want one per token)", name, len(t.Data), n)
	}
	if t.Shape != nil && (len(t.Shape) != 1 || t.Shape[0] != n) {
		return nil, fmt.Errorf("loss_fn_inputs.%s.shape %v: want [%d]", name, t.Shape, n)
	}
	for j, v := range t.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("loss_fn_inputs.%s[%d] = %v: not finite", name, j, v)
		}
	}
	return t.Data, nil
}
