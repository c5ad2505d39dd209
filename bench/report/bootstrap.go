package report

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Interval is a confidence interval.
type Interval struct {
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
}

// PairedBootstrap returns a percentile bootstrap confidence interval at the given level (e.g. 0.95)
// for the mean of diffs, the per-question differences of paired observations. Questions are
// resampled with replacement resamples times from a PCG generator seeded with seed, so the interval is
// reproducible. With no diffs it returns a zero interval.
func PairedBootstrap(diffs []float64, resamples int, level float64, seed uint64) Interval {
	ci := Interval{Level: level}
	n := len(diffs)
	if n == 0 || resamples <= 0 {
		return ci
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	for i := range means {
		sum := 0.0
		for range n {
			sum += diffs[rng.IntN(n)]
		}
		means[i] = sum / float64(n)
	}
	sort.Float64s(means)
	alpha := (1 - level) / 2
	ci.Low = quantile(means, alpha)
	ci.High = quantile(means, 1-alpha)
	return ci
}

// quantile is the linearly interpolated q-quantile of sorted xs (numpy's default method).
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}
