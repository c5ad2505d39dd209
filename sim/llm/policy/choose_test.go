package policy

import (
	"math"
	"testing"
)

// binaryChooser returns a chooser whose planner guess decision has
// P(yes) = q and whose delegate decision has the given option weights.
func testChooser(tb testing.TB, temperature float64, q float64, delegate [3]float64) *chooser {
	tb.Helper()
	s := DefaultSkills()
	s.Guess = q
	s.DelegateHop, s.DelegateChain, s.CrossCheck = delegate[0], delegate[1], delegate[2]
	c := newChooser(Request{Temperature: temperature, Rand: seeded(7)}, DefaultParams(s))
	c.role = RolePlanner
	return c
}

func TestChooserGreedy(t *testing.T) {
	tests := []struct {
		name     string
		weights  [3]float64
		want     int
		wantProb float64
	}{
		{"most probable", [3]float64{0.2, 0.5, 0.3}, 1, 0.5},
		{"first on a tie", [3]float64{1, 1, 0}, 0, 0.5},
		{"two options", [3]float64{0.25, 0.75, 0}, 1, 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testChooser(t, 0, 0.5, tt.weights)
			got := c.categorical(KindDelegate, 3, nil)
			if got != tt.want || math.Abs(math.Exp(c.logprob)-tt.wantProb) > 1e-9 {
				t.Errorf("categorical = %d (prob %v), want %d (prob %v)", got, math.Exp(c.logprob), tt.want, tt.wantProb)
			}
		})
	}
}

func TestChooserTemperature(t *testing.T) {
	tests := []struct {
		name        string
		temperature float64
		want        float64 // expected share of "yes" for P(yes) = 0.75
	}{
		{"T=1 samples p", 1, 0.75},
		{"T=0.5 sharpens", 0.5, 0.9}, // 0.75²/(0.75²+0.25²)
		{"T=2 flattens", 2, 0.634},   // √0.75/(√0.75+√0.25)
		{"T tiny is nearly greedy", 1e-6, 1},
	}
	const n = 20000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testChooser(t, tt.temperature, 0.75, [3]float64{1, 0, 0})
			hits := 0
			for range n {
				if c.flip(KindGuess) {
					hits++
				}
			}
			if got := float64(hits) / n; math.Abs(got-tt.want) > 0.015 {
				t.Errorf("share of yes = %.3f, want %.3f", got, tt.want)
			}
		})
	}
}

func TestChooserLogprob(t *testing.T) {
	c := testChooser(t, 1, 0.3, [3]float64{1, 0, 0})
	want := 0.0
	for range 5 {
		if c.flip(KindGuess) {
			want += math.Log(0.3)
		} else {
			want += math.Log(0.7)
		}
	}
	if math.Abs(c.logprob-want) > 1e-9 {
		t.Errorf("logprob = %v, want %v", c.logprob, want)
	}
	if len(c.decisions) != 5 {
		t.Errorf("recorded %d decisions, want 5", len(c.decisions))
	}
}

func TestChooserGroups(t *testing.T) {
	c := testChooser(t, 0, 0.5, [3]float64{0.6, 0.25, 0.15})
	if got := c.categorical(KindDelegate, 3, [][]int{{0, 1}, {2}}); got != 0 {
		t.Fatalf("outcome = %d, want 0", got)
	}
	if got, want := math.Exp(c.logprob), 0.85; math.Abs(got-want) > 1e-9 {
		t.Errorf("merged outcome prob = %v, want %v", got, want)
	}
}

func TestChooserNilRandIsGreedy(t *testing.T) {
	c := testChooser(t, 1, 0.6, [3]float64{1, 0, 0})
	c.rng = nil
	if !c.flip(KindGuess) {
		t.Errorf("flip with nil Rand = no, want the more probable yes")
	}
}
