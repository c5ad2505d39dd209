package rollout

// RewardsConfig holds the reward coefficients as a run's configuration
// holds them (its rewards key, read by the composition root).
type RewardsConfig struct {
	Alpha1         float64 `yaml:"alpha1" doc:"main reward: weight of r_format"`
	Alpha2         float64 `yaml:"alpha2" doc:"main reward: weight of r_correct"`
	Beta1          float64 `yaml:"beta1" doc:"sub reward: weight of r_format"`
	Beta2          float64 `yaml:"beta2" doc:"sub reward: weight of the main rollout's r_correct"`
	Beta3          float64 `yaml:"beta3" doc:"sub reward: weight of r_expert"`
	ExpertFallback string  `yaml:"expert_fallback" flag:"expert-fallback" scope:"farm" doc:"r_expert without a judge: format, zero or correct-main"`
}

// Weights returns the reward coefficients of r.
func (r RewardsConfig) Weights() RewardWeights {
	return RewardWeights{Alpha1: r.Alpha1, Alpha2: r.Alpha2, Beta1: r.Beta1, Beta2: r.Beta2, Beta3: r.Beta3}
}
