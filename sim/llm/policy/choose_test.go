package policy

import (
	"math"
	"testing"
)

func TestChooserGreedy(t *testing.T) {
	tests := []struct {
		name     string
		weights  []float64
		want     int
		wantProb float64
	}{
		{"most probable", []float64{0.2, 0.5, 0.3}, 1, 0.5},
		{"first on a tie", []float64{1, 1}, 0, 0.5},
		{"unnormalized", []float64{1, 3}, 1, 0.75},
		{"all zero", []float64{0, 0}, 0, 1},
		{"negative and NaN ignored", []float64{-1, math.NaN(), 2}, 2, 1},
		{"empty", nil, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChooser(Request{Temperature: 0, Rand: seeded(1)})
			got := c.pick(tt.weights...)
			if got != tt.want || math.Abs(c.prob-tt.wantProb) > 1e-12 {
				t.Errorf("pick = %d (prob %v), want %d (prob %v)", got, c.prob, tt.want, tt.wantProb)
			}
		})
	}
}

func TestChooserTemperature(t *testing.T) {
	tests := []struct {
		name        string
		temperature float64
		want        float64 // expected share of option 1 for weights (0.25, 0.75)
	}{
		{"T=1 samples p", 1, 0.75},
		{"T=0.5 sharpens", 0.5, 0.9}, // 0.75²/(0.75²+0.25²)
		{"T=2 flattens", 2, 0.634},   // √0.75/(√0.75+√0.25)
		{"T tiny is nearly greedy", 1e-6, 1},
	}
	const n = 20000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChooser(Request{Temperature: tt.temperature, Rand: seeded(7)})
			hits := 0
			for range n {
				hits += c.pick(0.25, 0.75)
			}
			if got := float64(hits) / n; math.Abs(got-tt.want) > 0.015 {
				t.Errorf("share of option 1 = %.3f, want %.3f", got, tt.want)
			}
		})
	}
}

func TestChooserProb(t *testing.T) {
	c := newChooser(Request{Temperature: 1, Rand: seeded(3)})
	want := 1.0
	for range 5 {
		if c.flip(0.3) {
			want *= 0.3
		} else {
			want *= 0.7
		}
	}
	c.flip(1) // certain events cost nothing
	c.flip(0)
	if math.Abs(c.prob-want) > 1e-12 {
		t.Errorf("prob = %v, want %v", c.prob, want)
	}
}

func TestChooserNilRandIsGreedy(t *testing.T) {
	c := newChooser(Request{Temperature: 1})
	if got := c.pick(0.4, 0.6); got != 1 {
		t.Errorf("pick with nil Rand = %d, want 1", got)
	}
}
