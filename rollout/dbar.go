package rollout

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DBarQuantile is the quantile of observed d_k that an automatic d̄ takes
// (the paper picks d̄ so that P(d ≤ d̄) ≈ 0.99).
const DBarQuantile = 0.99

// DBarSpec says how d̄ is chosen: a fixed number, or automatically from
// observed d_k values.
type DBarSpec struct {
	// Auto selects the DBarQuantile quantile of observed d_k.
	Auto bool
	// Fixed is d̄ when Auto is false; it must be ≥ 1.
	Fixed int
}

// ParseDBar reads "auto" or a positive integer.
func ParseDBar(s string) (DBarSpec, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "auto") {
		return DBarSpec{Auto: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return DBarSpec{}, fmt.Errorf("dbar %q: want a positive integer or auto", s)
	}
	return DBarSpec{Fixed: n}, nil
}

// String returns "auto" or the fixed number.
func (s DBarSpec) String() string {
	if s.Auto {
		return "auto"
	}
	return strconv.Itoa(s.Fixed)
}

// Resolve returns d̄: the fixed value, or with Auto the DBarQuantile quantile
// of observed (the d_k of a calibration pass or of the previous step), at
// least 1. Auto with no observations is an error.
func (s DBarSpec) Resolve(observed []int) (int, error) {
	if !s.Auto {
		if s.Fixed < 1 {
			return 0, fmt.Errorf("dbar = %d, want ≥ 1", s.Fixed)
		}
		return s.Fixed, nil
	}
	if len(observed) == 0 {
		return 0, fmt.Errorf("dbar auto: no observed d_k to calibrate from")
	}
	return max(1, Quantile(observed, DBarQuantile)), nil
}

// Quantile returns the nearest-rank q-quantile of values: the smallest value v
// such that at least a fraction q of values are ≤ v, that is the
// ⌈q·n⌉-th smallest (the smallest for q ≤ 0). It returns 0 for no values.
func Quantile(values []int, q float64) int {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	// The small tolerance keeps binary rounding of q·n (0.99·300 is not
	// exactly 297 in floating point) from moving the rank up by one.
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
