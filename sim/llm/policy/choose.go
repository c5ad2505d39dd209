package policy

import (
	"math"
	"math/rand/v2"
)

// chooser makes every stochastic decision of one turn, so temperature and
// the turn's ChoiceProb are handled in exactly one place.
type chooser struct {
	temperature float64
	rng         *rand.Rand
	// prob is the product of the pre-temperature probabilities of the
	// options taken so far this turn.
	prob float64
}

func newChooser(req Request) *chooser {
	t := req.Temperature
	if math.IsNaN(t) || t < 0 {
		t = 0
	}
	return &chooser{temperature: t, rng: req.Rand, prob: 1}
}

// greedy reports whether choices take their most probable option: at
// temperature 0, and also above it when the request carries no random
// source (so a nil Rand can never crash the server).
func (c *chooser) greedy() bool {
	return c.temperature == 0 || c.rng == nil
}

// pick returns the index of the option taken among weights (non-negative,
// not necessarily normalized). Greedy picks the first most probable option;
// otherwise the normalized probabilities p are reshaped as p^(1/T) and
// sampled. Zero or invalid weights throughout fall back to option 0.
func (c *chooser) pick(weights ...float64) int {
	if len(weights) == 0 {
		return 0
	}
	total := 0.0
	for _, w := range weights {
		if w > 0 && !math.IsInf(w, 0) {
			total += w
		}
	}
	if total == 0 {
		return 0
	}
	p := func(i int) float64 {
		w := weights[i]
		if !(w > 0) || math.IsInf(w, 0) {
			return 0
		}
		return w / total
	}
	best := 0
	for i := range weights {
		if p(i) > p(best) {
			best = i
		}
	}
	if c.greedy() {
		c.prob *= p(best)
		return best
	}
	// Work in log space so tiny temperatures do not underflow p^(1/T).
	inv := 1 / c.temperature
	logBest := math.Log(p(best))
	shaped := make([]float64, len(weights))
	sum := 0.0
	for i := range weights {
		if pi := p(i); pi > 0 {
			shaped[i] = math.Exp((math.Log(pi) - logBest) * inv)
			sum += shaped[i]
		}
	}
	r := c.rng.Float64() * sum
	taken := best
	for i, s := range shaped {
		if s == 0 {
			continue
		}
		if r < s {
			taken = i
			break
		}
		r -= s
	}
	c.prob *= p(taken)
	return taken
}

// flip takes an event of probability q and reports whether it happened.
// Certain and impossible events cost nothing in ChoiceProb.
func (c *chooser) flip(q float64) bool {
	if q <= 0 || math.IsNaN(q) {
		return false
	}
	if q >= 1 {
		return true
	}
	return c.pick(1-q, q) == 1
}

// intn picks uniformly among n options (n < 1 yields 0).
func (c *chooser) intn(n int) int {
	if n <= 1 {
		return 0
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return c.pick(w...)
}
