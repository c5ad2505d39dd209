package policy

import (
	"math"
	"math/rand/v2"
)

// Decision is one stochastic decision of a turn as the chooser made it:
// the options' features and logits under the turn's Params, their
// probabilities, and the outcome taken. Options may be grouped into
// outcomes when several options write the same text (the planner's hop and
// chain styles when one hop is left): the outcome's probability is then the
// sum of its options'.
type Decision struct {
	Role Role
	Kind Kind
	// Offset is the index in Params.Vector() of the decision's block; -1
	// for a decision without parameters (KindMinority).
	Offset int
	// Features holds φ_j for every option j, each as long as the block.
	Features [][]float64
	// Logits are θ·φ_j; Probs their softmax.
	Logits []float64
	Probs  []float64
	// Groups lists, per outcome, the options it covers; nil means each
	// option is its own outcome.
	Groups [][]int
	// Taken is the outcome taken.
	Taken int
}

// Outcomes returns how many outcomes the decision has.
func (d *Decision) Outcomes() int {
	if d.Groups == nil {
		return len(d.Probs)
	}
	return len(d.Groups)
}

// OutcomeProb returns the probability of outcome g.
func (d *Decision) OutcomeProb(g int) float64 {
	if d.Groups == nil {
		return d.Probs[g]
	}
	q := 0.0
	for _, j := range d.Groups[g] {
		q += d.Probs[j]
	}
	return q
}

// Logprob returns the log-probability of the outcome taken.
func (d *Decision) Logprob() float64 { return math.Log(d.OutcomeProb(d.Taken)) }

// AddGrad adds d log P(taken) / dθ to grad (the flat vector's gradient):
// for the options j of the taken outcome g, Σ (p_j/p_g) φ_j, minus E_p[φ].
func (d *Decision) AddGrad(grad []float64) {
	if d.Offset < 0 {
		return
	}
	qg := d.OutcomeProb(d.Taken)
	in := func(j int) bool {
		if d.Groups == nil {
			return j == d.Taken
		}
		for _, k := range d.Groups[d.Taken] {
			if k == j {
				return true
			}
		}
		return false
	}
	for j, phi := range d.Features {
		w := -d.Probs[j]
		if in(j) && qg > 0 {
			w += d.Probs[j] / qg
		}
		if w == 0 {
			continue
		}
		for i, x := range phi {
			grad[d.Offset+i] += w * x
		}
	}
}

// chooser makes every stochastic decision of one turn, so Params,
// temperature, the turn's logprob and the record of its decisions are
// handled in exactly one place. When follow is set (replay) it takes the
// given outcomes in order and the most probable outcome after them.
type chooser struct {
	temperature float64
	filters     Filters
	rng         *rand.Rand
	params      *Params
	role        Role
	ctx         [3]float64 // the context features: bias, turn, calls
	// logprob is the sum of the pre-temperature log-probabilities of the
	// outcomes taken so far this turn.
	logprob   float64
	decisions []Decision

	replay bool
	follow []int
	bad    bool // a followed outcome did not exist or had probability 0
}

func newChooser(req Request, params *Params) *chooser {
	t := req.Temperature
	if math.IsNaN(t) || t < 0 {
		t = 0
	}
	return &chooser{temperature: t, filters: req.Filters, rng: req.Rand, params: params, ctx: [3]float64{1, 0, 0}}
}

// greedy reports whether choices take their most probable option: at
// temperature 0, and also above it when the request carries no random
// source (so a nil Rand can never crash the server).
func (c *chooser) greedy() bool {
	return c.temperature == 0 || c.rng == nil
}

// decide makes one decision among options with features feats under the
// role's block of kind, grouped into outcomes by groups (nil: one outcome
// per option), and returns the outcome taken.
func (c *chooser) decide(kind Kind, feats [][]float64, groups [][]int) int {
	d := Decision{Role: c.role, Kind: kind, Offset: -1, Features: feats, Groups: groups}
	var theta []float64
	if b := findBlock(c.role, kind); b != nil {
		d.Offset = b.offset
		theta = c.params.v[b.offset : b.offset+len(b.names)]
	}
	d.Logits = make([]float64, len(feats))
	top := math.Inf(-1)
	for j, phi := range feats {
		l := 0.0
		for i, x := range phi {
			l += theta[i] * x
		}
		d.Logits[j] = l
		top = max(top, l)
	}
	d.Probs = make([]float64, len(feats))
	sum := 0.0
	for j, l := range d.Logits {
		d.Probs[j] = math.Exp(l - top)
		sum += d.Probs[j]
	}
	for j := range d.Probs {
		d.Probs[j] /= sum
	}
	n := d.Outcomes()
	best := 0
	for g := 1; g < n; g++ {
		if d.OutcomeProb(g) > d.OutcomeProb(best) {
			best = g
		}
	}
	taken := best
	switch {
	case c.replay:
		if i := len(c.decisions); i < len(c.follow) {
			taken = c.follow[i]
			if taken < 0 || taken >= n || !(d.OutcomeProb(taken) > 0) {
				c.bad, taken = true, best
			}
		}
	case !c.greedy():
		taken = c.sample(&d, best)
	}
	d.Taken = taken
	c.logprob += d.Logprob()
	c.decisions = append(c.decisions, d)
	return taken
}

// sample draws an outcome of d with probabilities p reshaped as p^(1/T),
// working in log space so tiny temperatures do not underflow.
func (c *chooser) sample(d *Decision, best int) int {
	if c.filters.active() {
		return c.sampleFiltered(d, best)
	}
	n := d.Outcomes()
	inv := 1 / c.temperature
	logBest := math.Log(d.OutcomeProb(best))
	shaped := make([]float64, n)
	sum := 0.0
	for g := range n {
		if q := d.OutcomeProb(g); q > 0 {
			shaped[g] = math.Exp((math.Log(q) - logBest) * inv)
			sum += shaped[g]
		}
	}
	r := c.rng.Float64() * sum
	for g, s := range shaped {
		if s == 0 {
			continue
		}
		if r < s {
			return g
		}
		r -= s
	}
	return best
}

// sampleFiltered draws an outcome of d from its tempered probabilities
// after the request's filters (see Decision.tempered). It is a path of its
// own so that unfiltered requests draw exactly as before filters existed.
func (c *chooser) sampleFiltered(d *Decision, best int) int {
	s := d.tempered(c.temperature, c.filters, true)
	r := c.rng.Float64()
	for g, p := range s {
		if p == 0 {
			continue
		}
		if r < p {
			return g
		}
		r -= p
	}
	return best
}

// context returns a copy of the turn's context features.
func (c *chooser) context() []float64 { return []float64{c.ctx[0], c.ctx[1], c.ctx[2]} }

// flip makes a binary decision of kind and reports whether "yes" was taken.
func (c *chooser) flip(kind Kind) bool {
	return c.decide(kind, [][]float64{make([]float64, len(contextNames)), c.context()}, nil) == 1
}

// categorical decides among k options of kind, the first the reference,
// every other with its own weights on the context features.
func (c *chooser) categorical(kind Kind, k int, groups [][]int) int {
	m := len(contextNames)
	feats := make([][]float64, k)
	for j := range feats {
		feats[j] = make([]float64, (k-1)*m)
		if j > 0 {
			copy(feats[j][(j-1)*m:], c.ctx[:])
		}
	}
	return c.decide(kind, feats, groups)
}

// uniform picks uniformly among n options (n < 1 yields 0) as a decision
// of kind without parameters.
func (c *chooser) uniform(kind Kind, n int) int {
	if n <= 1 {
		return 0
	}
	return c.decide(kind, make([][]float64, n), nil)
}
