package rollout

import "testing"

func TestRewardsConfigWeights(t *testing.T) {
	r := RewardsConfig{Alpha1: 0.1, Alpha2: 0.9, Beta1: 0.2, Beta2: 0.3, Beta3: 0.5, ExpertFallback: "zero"}
	want := RewardWeights{Alpha1: 0.1, Alpha2: 0.9, Beta1: 0.2, Beta2: 0.3, Beta3: 0.5}
	if got := r.Weights(); got != want {
		t.Errorf("Weights() = %+v, want %+v", got, want)
	}
}
