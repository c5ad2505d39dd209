package rollout

import (
	"fmt"
	"math"
)

// Epsilon is the ε added to σ in Â = (R − μ)/(σ + ε). It keeps the division
// defined for tiny σ while changing advantages of groups with rewards on the
// usual [0, 1] scale by less than one part in 10⁴.
const Epsilon = 1e-6

// Moments are the mean and population standard deviation of a group of
// rewards.
type Moments struct {
	// Mean is μ, the arithmetic mean.
	Mean float64
	// Std is σ, the population standard deviation (divisor n).
	Std float64
	// ZeroVariance is true when every reward of the group is exactly equal
	// (including a group of one); Std is then 0 and Mean that reward.
	ZeroVariance bool
}

// GroupMoments returns the moments of rewards. An empty group has zero
// moments and ZeroVariance false.
func GroupMoments(rewards []float64) Moments {
	if len(rewards) == 0 {
		return Moments{}
	}
	same := true
	for _, r := range rewards[1:] {
		if r != rewards[0] {
			same = false
			break
		}
	}
	if same {
		return Moments{Mean: rewards[0], ZeroVariance: true}
	}
	var sum float64
	for _, r := range rewards {
		sum += r
	}
	mean := sum / float64(len(rewards))
	var ss float64
	for _, r := range rewards {
		ss += (r - mean) * (r - mean)
	}
	return Moments{Mean: mean, Std: math.Sqrt(ss / float64(len(rewards)))}
}

// Advantages returns the group-relative advantages (R − μ)/(σ + Epsilon) of
// rewards together with their moments. In a zero-variance group every
// advantage is exactly 0.
func Advantages(rewards []float64) ([]float64, Moments) {
	m := GroupMoments(rewards)
	adv := make([]float64, len(rewards))
	if m.ZeroVariance {
		return adv, m
	}
	for i, r := range rewards {
		adv[i] = (r - m.Mean) / (m.Std + Epsilon)
	}
	return adv, m
}

// checkFinite returns an error naming what when v is NaN or infinite.
func checkFinite(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s = %v: not a finite number", what, v)
	}
	return nil
}
