package rollouttest

import "math"

// ReferenceAdvantages is the textbook group-relative advantage, written
// independently of rollout.Advantages so tests can check it (and whatever
// recomputes advantages) against the formula: Â_i = (R_i − μ)/(σ + 1e-6)
// with μ the mean and σ the population standard deviation of the group's
// rewards, and exactly 0 for every member of a group whose rewards are all
// equal.
func ReferenceAdvantages(rewards []float64) []float64 {
	out := make([]float64, len(rewards))
	if len(rewards) == 0 {
		return out
	}
	equal := true
	var mean float64
	for _, r := range rewards {
		mean += r
		equal = equal && r == rewards[0]
	}
	if equal {
		return out
	}
	mean /= float64(len(rewards))
	var v float64
	for _, r := range rewards {
		v += (r - mean) * (r - mean)
	}
	sd := math.Sqrt(v / float64(len(rewards)))
	for i, r := range rewards {
		out[i] = (r - mean) / (sd + 1e-6)
	}
	return out
}
