package rollout

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

func TestAdvantages(t *testing.T) {
	tests := []struct {
		name     string
		rewards  []float64
		mean     float64
		std      float64
		zeroVar  bool
		wantAdvs []float64
	}{
		{
			name:    "two correct two wrong",
			rewards: []float64{1, 0, 1, 0},
			mean:    0.5, std: 0.5,
			wantAdvs: []float64{0.5 / 0.500001, -0.5 / 0.500001, 0.5 / 0.500001, -0.5 / 0.500001},
		},
		{
			// μ = 2.1/4 = 0.525; deviations 0.475, −0.425, −0.525, 0.475;
			// σ² = (0.225625+0.180625+0.275625+0.225625)/4 = 0.226875.
			name:    "default weights: correct, wrong, invalid, correct",
			rewards: []float64{1.0, 0.1, 0, 1.0},
			mean:    0.525, std: math.Sqrt(0.226875),
			wantAdvs: []float64{
				0.475 / (math.Sqrt(0.226875) + 1e-6),
				-0.425 / (math.Sqrt(0.226875) + 1e-6),
				-0.525 / (math.Sqrt(0.226875) + 1e-6),
				0.475 / (math.Sqrt(0.226875) + 1e-6),
			},
		},
		{
			// μ = 0.3, σ² = (0.09+0.09)/2 = 0.09.
			name:    "pair",
			rewards: []float64{0.6, 0},
			mean:    0.3, std: 0.3,
			wantAdvs: []float64{0.3 / 0.300001, -0.3 / 0.300001},
		},
		{
			name:    "zero variance, a value whose mean would round",
			rewards: []float64{0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7},
			mean:    0.7, zeroVar: true,
			wantAdvs: make([]float64, 8),
		},
		{
			name:    "group of one",
			rewards: []float64{0.4},
			mean:    0.4, zeroVar: true,
			wantAdvs: []float64{0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adv, m := Advantages(tt.rewards)
			if !near(m.Mean, tt.mean) || !near(m.Std, tt.std) || m.ZeroVariance != tt.zeroVar {
				t.Fatalf("moments = %+v, want mean %v std %v zero %v", m, tt.mean, tt.std, tt.zeroVar)
			}
			for i := range adv {
				if !near(adv[i], tt.wantAdvs[i]) {
					t.Errorf("advantage[%d] = %v, want %v", i, adv[i], tt.wantAdvs[i])
				}
				if tt.zeroVar && adv[i] != 0 {
					t.Errorf("advantage[%d] = %v, want exactly 0", i, adv[i])
				}
			}
		})
	}
}

func TestGroupMomentsEmpty(t *testing.T) {
	if m := GroupMoments(nil); m != (Moments{}) {
		t.Fatalf("GroupMoments(nil) = %+v, want zero", m)
	}
}
