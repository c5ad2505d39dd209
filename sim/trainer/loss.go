package trainer

import (
	"fmt"
	"math"
	"net/http"
)

// lossSpec is a request's loss function and its configuration.
type lossSpec struct {
	fn string
	// lo and hi are ppo's thresholds on the probability ratio.
	lo, hi float64
}

// PPO's default thresholds, as Tinker's loss documentation has them.
const (
	defaultClipLow  = 0.8
	defaultClipHigh = 1.2
)

func parseLoss(fn string, cfg map[string]float64) (lossSpec, *httpError) {
	s := lossSpec{fn: fn, lo: defaultClipLow, hi: defaultClipHigh}
	switch fn {
	case lossImportanceSampling, lossCrossEntropy:
	case lossPPO:
		if v, ok := cfg["clip_low_threshold"]; ok {
			s.lo = v
		}
		if v, ok := cfg["clip_high_threshold"]; ok {
			s.hi = v
		}
		if !(s.lo >= 0 && s.lo <= 1 && s.hi >= 1) {
			return s, errorf(http.StatusBadRequest, "loss_fn_config: clip_low_threshold %v and clip_high_threshold %v are thresholds on the ratio (want 0 ≤ low ≤ 1 ≤ high)", s.lo, s.hi)
		}
	case "":
		return s, errorf(http.StatusBadRequest, "loss_fn: missing")
	default:
		return s, errorf(http.StatusBadRequest, "loss_fn %q: not served (want %s, %s or %s)", fn, lossImportanceSampling, lossPPO, lossCrossEntropy)
	}
	return s, nil
}

// datumResult is one datum's loss under the recomputed logprobs.
type datumResult struct {
	logprobs    []float64 // per target: the trainer's logprob of seq[j+1]
	elementwise []float64 // per target: its weighted loss
	loss        float64
	// coef holds d loss / d Logprobs[pos] for the positions with one, in
	// ascending position: the gradient is summed in this order, so the same
	// datums always give bit-identical parameters (a map's order is random,
	// and floating-point addition is not associative).
	coef []posCoef
	// weighted counts the targets in the loss; clipped those whose ratio
	// ppo clipped; diffSum and diffMax the |trainer − sampler| over them.
	weighted, clipped int
	diffSum, diffMax  float64
	unmatched         int
	// adv is the mean advantage over the weighted targets (hasAdv false
	// when none).
	adv    float64
	hasAdv bool
}

// posCoef is the loss's derivative with respect to the logprob at pos.
type posCoef struct {
	pos int
	c   float64
}

// apply computes d's loss from sc, the policy's scores of d.seq.
// importance_sampling: −Σ w·r·A with r = exp(new − sampler);
// ppo: −Σ w·min(r·A, clip(r, lo, hi)·A); cross_entropy: −Σ w·new.
func (s lossSpec) apply(d datum, sc Scored) (datumResult, error) {
	if len(sc.Logprobs) != len(d.seq) {
		return datumResult{}, fmt.Errorf("policy scored %d positions of a %d-token sequence", len(sc.Logprobs), len(d.seq))
	}
	unmatched := make([]bool, len(d.seq))
	for _, u := range sc.Unmatched {
		for p := max(u.Start, 0); p < min(u.End, len(d.seq)); p++ {
			unmatched[p] = true
		}
	}
	n := len(d.weights)
	r := datumResult{logprobs: make([]float64, n), elementwise: make([]float64, n)}
	advSum := 0.0
	for j := range n {
		pos := j + 1
		lp := sc.Logprobs[pos]
		r.logprobs[j] = lp
		w := d.weights[j]
		if w == 0 {
			continue
		}
		if unmatched[pos] {
			r.unmatched++
			continue
		}
		r.weighted++
		var l, c float64
		switch s.fn {
		case lossCrossEntropy:
			l, c = -w*lp, -w
		default:
			a := d.advantages[j]
			advSum += a
			diff := math.Abs(lp - d.sampler[j])
			r.diffSum += diff
			r.diffMax = max(r.diffMax, diff)
			ratio := math.Exp(lp - d.sampler[j])
			if s.fn == lossImportanceSampling {
				l, c = -w*ratio*a, -w*ratio*a
				break
			}
			clipped := min(max(ratio, s.lo), s.hi)
			if ratio < s.lo || ratio > s.hi {
				r.clipped++
			}
			if ratio*a <= clipped*a {
				// The unclipped term is the minimum: its gradient flows.
				l, c = -w*ratio*a, -w*ratio*a
			} else {
				l, c = -w*clipped*a, 0
			}
		}
		r.elementwise[j] = l
		r.loss += l
		if c != 0 {
			r.coef = append(r.coef, posCoef{pos, c})
		}
	}
	if r.weighted > 0 && s.fn != lossCrossEntropy {
		r.adv, r.hasAdv = advSum/float64(r.weighted), true
	}
	return r, nil
}

// groupRecord is a datum's group, reward and advantage, kept from the
// forward_backward requests of one optimizer step.
type groupRecord struct {
	group  string
	reward float64
	adv    float64
}

// orderViolations counts the pairs within a group, among old and added
// records, with at least one added, where one reward is higher but its
// advantage is not.
func orderViolations(old, added []groupRecord) int {
	bad := func(a, b groupRecord) bool {
		if a.group != b.group {
			return false
		}
		return a.reward > b.reward && a.adv <= b.adv || b.reward > a.reward && b.adv <= a.adv
	}
	n := 0
	for i, a := range added {
		for _, b := range old {
			if bad(a, b) {
				n++
			}
		}
		for _, b := range added[:i] {
			if bad(a, b) {
				n++
			}
		}
	}
	return n
}
