package policy

import (
	"math"
	"sort"
)

// LogprobsMode says which distribution the logprob of a turn (Output.Logprob)
// describes. Sampling is the same in every mode; only the reported number
// differs, as vLLM's --logprobs-mode and SGLang's defaults differ.
type LogprobsMode int

// The modes.
const (
	// LogprobsRaw reports the model's probabilities, before temperature
	// and the top-k, top-p and min-p filters (vLLM's default,
	// raw_logprobs; the zero value).
	LogprobsRaw LogprobsMode = iota
	// LogprobsProcessed reports the probabilities of the distribution the
	// outcome was drawn from: tempered, filtered and renormalised (vLLM's
	// processed_logprobs).
	LogprobsProcessed
	// LogprobsTempered reports the tempered probabilities before the
	// filters (SGLang's logprobs).
	LogprobsTempered
)

// Filters are the top-k, top-p and min-p filters of a request, applied to
// each decision's outcomes after temperature, as an engine applies them to
// the vocabulary. The zero value filters nothing.
type Filters struct {
	// TopK keeps the TopK most probable outcomes (0 or less: all).
	TopK int
	// TopP keeps the most probable outcomes whose probabilities reach TopP
	// (0 or 1 and above: all).
	TopP float64
	// MinP keeps the outcomes at least MinP times the most probable one
	// (0 or less: all).
	MinP float64
}

// active reports whether f removes anything at all.
func (f Filters) active() bool {
	return f.TopK > 0 || (f.TopP > 0 && f.TopP < 1) || f.MinP > 0
}

// tempered returns d's outcome probabilities reshaped as q^(1/T) and
// renormalised, with the outcomes f filters out at 0 when filter is set
// (the kept ones renormalised among themselves). Temperature 0 (greedy)
// tempers nothing: an engine scales no logits for a greedy request.
func (d *Decision) tempered(t float64, f Filters, filter bool) []float64 {
	n := d.Outcomes()
	inv := 1.0
	if t > 0 {
		inv = 1 / t
	}
	top := math.Inf(-1)
	for g := range n {
		if q := d.OutcomeProb(g); q > 0 {
			top = max(top, math.Log(q))
		}
	}
	s := make([]float64, n)
	sum := 0.0
	for g := range n {
		if q := d.OutcomeProb(g); q > 0 {
			s[g] = math.Exp((math.Log(q) - top) * inv)
			sum += s[g]
		}
	}
	for g := range s {
		s[g] /= sum
	}
	if filter && f.active() {
		keep := keptOutcomes(s, f)
		sum = 0
		for g := range s {
			if !keep[g] {
				s[g] = 0
			}
			sum += s[g]
		}
		for g := range s {
			s[g] /= sum
		}
	}
	return s
}

// keptOutcomes applies f to the probabilities s: top-k, then top-p over
// what is left, then min-p, ties broken by the lower index (the most
// probable outcome always stays).
func keptOutcomes(s []float64, f Filters) []bool {
	order := make([]int, len(s))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s[order[a]] > s[order[b]] })
	keep := make([]bool, len(s))
	n := len(order)
	if f.TopK > 0 {
		n = min(n, f.TopK)
	}
	if f.TopP > 0 && f.TopP < 1 {
		total, cum := 0.0, 0.0
		for _, g := range order[:n] {
			total += s[g]
		}
		for i, g := range order[:n] {
			cum += s[g] / total
			if cum >= f.TopP {
				n = i + 1
				break
			}
		}
	}
	best := s[order[0]]
	for _, g := range order[:max(n, 1)] {
		if f.MinP > 0 && s[g] < f.MinP*best {
			continue
		}
		keep[g] = s[g] > 0
	}
	keep[order[0]] = true
	return keep
}

// ReportedLogprob returns the logprob of the outcomes taken in ds as mode
// reports it for a request sampled at temperature t with filters f: the
// sum of each decision's raw, processed or tempered log-probability. With
// neutral sampling (t 1, no filter) every mode gives the raw sum. An
// outcome a filter removed (a path Score recovered for an ambiguous text
// may take one) counts at its tempered probability.
func ReportedLogprob(ds []Decision, mode LogprobsMode, t float64, f Filters) float64 {
	lp := 0.0
	neutral := t == 1 && !f.active()
	for i := range ds {
		d := &ds[i]
		if mode == LogprobsRaw || neutral {
			lp += d.Logprob()
			continue
		}
		s := d.tempered(t, f, mode == LogprobsProcessed)
		p := s[d.Taken]
		if p == 0 {
			p = d.tempered(t, f, false)[d.Taken]
		}
		lp += math.Log(p)
	}
	return lp
}

// AddTemperedGrad adds d log s(taken) / dθ to grad, where s is the
// decision's outcome distribution tempered at t (unfiltered): the gradient
// of the logprob a trainer computes from logits divided by the sampling
// temperature. With q the outcome probabilities and p the options', it is
// (1/t)·(Σ_{j∈g} (p_j/q_g) φ_j − Σ_h s_h Σ_{j∈h} (p_j/q_h) φ_j); at t 1 it
// equals AddGrad's.
func (d *Decision) AddTemperedGrad(grad []float64, t float64) {
	if d.Offset < 0 {
		return
	}
	if t <= 0 || t == 1 {
		d.AddGrad(grad)
		return
	}
	s := d.tempered(t, Filters{}, false)
	members := func(g int) []int {
		if d.Groups == nil {
			return []int{g}
		}
		return d.Groups[g]
	}
	w := make([]float64, len(d.Features))
	for g := range d.Outcomes() {
		qg := d.OutcomeProb(g)
		if qg <= 0 {
			continue
		}
		c := -s[g]
		if g == d.Taken {
			c++
		}
		for _, j := range members(g) {
			w[j] += c * d.Probs[j] / qg / t
		}
	}
	for j, phi := range d.Features {
		if w[j] == 0 {
			continue
		}
		for i, x := range phi {
			grad[d.Offset+i] += w[j] * x
		}
	}
}
