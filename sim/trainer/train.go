package trainer

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// lossRun returns the run of a forward (backward false) or forward_backward
// request: every datum scored under the current parameters, the loss and
// its diagnostics reported, and, for forward_backward, the gradient added
// to the model's (it is applied by optim_step).
func (s *Server) lossRun(data []datum, loss lossSpec, backward bool) func(*model) (any, *failure) {
	return func(m *model) (any, *failure) {
		m.st.Lock()
		defer m.st.Unlock()
		var grads [][]float64
		out := forwardBackwardOutput{LossFnOutputType: "ArrayRecord", LossFnOutputs: make([]map[string]tensorOut, len(data))}
		var (
			total                 float64
			weighted, clipped, rl int
			diffSum, diffMax      float64
			unmatched             int
			added                 []groupRecord
		)
		for i, d := range data {
			sc, err := s.cfg.Policy.Score(m.params, d.seq, d.mask())
			if err != nil {
				return nil, &failure{categoryUser, fmt.Sprintf("datum %d: score: %v", i, err)}
			}
			r, err := loss.apply(d, sc)
			if err != nil {
				return nil, &failure{categoryServer, fmt.Sprintf("datum %d: %v", i, err)}
			}
			var grad []float64
			for _, pc := range r.coef {
				pos, c := pc.pos, pc.c
				g := sc.Grads[pos]
				if g == nil {
					continue
				}
				if len(g) != len(m.params) {
					return nil, &failure{categoryServer, fmt.Sprintf("datum %d: policy gave a gradient of %d entries at position %d for %d parameters", i, len(g), pos, len(m.params))}
				}
				if backward {
					if grad == nil {
						grad = make([]float64, len(m.params))
					}
					for k, v := range g {
						grad[k] += c * v
					}
				}
			}
			if grad != nil {
				grads = append(grads, grad)
			}
			out.LossFnOutputs[i] = map[string]tensorOut{"logprobs": float32Tensor(r.logprobs), "elementwise_loss": float32Tensor(r.elementwise)}
			total += r.loss
			weighted += r.weighted
			clipped += r.clipped
			unmatched += r.unmatched
			if loss.fn != lossCrossEntropy {
				rl += r.weighted
				diffSum += r.diffSum
				diffMax = max(diffMax, r.diffMax)
			}
			if sc.RewardKnown && r.hasAdv {
				added = append(added, groupRecord{group: sc.Group, reward: sc.Reward, adv: r.adv})
			}
		}
		old := m.records
		if !backward {
			old = nil
		}
		out.Metrics = map[string]float64{
			"loss:sum":                       total,
			"weighted_tokens:sum":            float64(weighted),
			"unmatched_tokens:sum":           float64(unmatched),
			"clip_fraction:mean":             ratio(clipped, weighted),
			"logprob_diff_abs:mean":          diffSum / math.Max(float64(rl), 1),
			"logprob_diff_abs:max":           diffMax,
			"advantage_order_violations:sum": float64(orderViolations(old, added)),
			// How many datums the order check covered: a violation count
			// of 0 means something only when this is not.
			"reward_known:sum": float64(len(added)),
		}
		if backward {
			m.grads = append(m.grads, grads...)
			m.records = append(m.records, added...)
			m.accumulated += len(data)
		}
		return out, nil
	}
}

// gradient returns the sum of the datums' gradients since the last
// optim_step. Floating-point addition is not associative, and the datums
// reach the trainer in the order the client's rollouts finished (chunked
// into requests accordingly), so the sum is taken in an order of their own:
// the datums' gradients sorted by their bits. The same datums, in any order
// and any chunking, give bit-identical gradients and parameters.
func (m *model) gradient() []float64 {
	sorted := slices.Clone(m.grads)
	slices.SortFunc(sorted, compareBits)
	sum := make([]float64, len(m.params))
	for _, g := range sorted {
		for k, v := range g {
			sum[k] += v
		}
	}
	return sum
}

// compareBits orders vectors by the bits of their entries, first to last.
func compareBits(a, b []float64) int {
	for i := range min(len(a), len(b)) {
		if c := cmp.Compare(math.Float64bits(a[i]), math.Float64bits(b[i])); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// optimRun returns the run of an optim_step: one Adam step with the
// gradient summed since the last one, which is then cleared.
func optimRun(c adamConfig) func(*model) (any, *failure) {
	return func(m *model) (any, *failure) {
		m.st.Lock()
		defer m.st.Unlock()
		gradNorm, updateNorm := m.adam.step(m.params, m.gradient(), c)
		paramNorm := 0.0
		for _, p := range m.params {
			paramNorm += p * p
		}
		metrics := map[string]float64{
			"grad_norm":     gradNorm,
			"update_norm":   updateNorm,
			"param_norm":    math.Sqrt(paramNorm),
			"learning_rate": c.lr,
			"adam_step":     float64(m.adam.t),
			"datums":        float64(m.accumulated),
		}
		m.grads = nil
		m.records = nil
		m.accumulated = 0
		return map[string]any{"metrics": metrics}, nil
	}
}

// saveRun returns the run of a save_weights_for_sampler: the parameters
// written with Policy.Save to CheckpointDir/MODEL/NAME.json.
func (s *Server) saveRun(name string) func(*model) (any, *failure) {
	return func(m *model) (any, *failure) {
		if s.cfg.CheckpointDir == "" {
			return nil, &failure{categoryUser, "save_weights_for_sampler: the sim trainer has no checkpoint directory"}
		}
		m.st.Lock()
		params := append([]float64(nil), m.params...)
		m.st.Unlock()
		dir := filepath.Join(s.cfg.CheckpointDir, m.id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, &failure{categoryServer, fmt.Sprintf("save_weights_for_sampler: %v", err)}
		}
		path := filepath.Join(dir, name+".json")
		if err := s.cfg.Policy.Save(params, path); err != nil {
			return nil, &failure{categoryServer, fmt.Sprintf("save_weights_for_sampler: save %s: %v", path, err)}
		}
		path = samplerPath(m.id, name)
		s.mu.Lock()
		s.samplers[path] = samplerWeights{base: m.base, params: params}
		s.mu.Unlock()
		m.addCheckpoint(checkpoint{ID: "sampler_weights/" + name, Type: "sampler", Time: s.cfg.Now().UTC(), Path: path})
		return map[string]string{"path": path, "type": "save_weights_for_sampler"}, nil
	}
}
