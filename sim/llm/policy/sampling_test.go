package policy

import (
	"math"
	"testing"
)

// testDecision is a decision of three options over two features, the last
// two grouped into one outcome when grouped.
func testDecision(theta []float64, taken int, grouped bool) Decision {
	feats := [][]float64{{0, 0}, {1, 0.5}, {-0.3, 1}}
	d := Decision{Offset: 0, Features: feats, Taken: taken}
	if grouped {
		d.Groups = [][]int{{0}, {1, 2}}
	}
	d.Logits = make([]float64, len(feats))
	sum := 0.0
	d.Probs = make([]float64, len(feats))
	for j, phi := range feats {
		d.Logits[j] = theta[0]*phi[0] + theta[1]*phi[1]
		d.Probs[j] = math.Exp(d.Logits[j])
		sum += d.Probs[j]
	}
	for j := range d.Probs {
		d.Probs[j] /= sum
	}
	return d
}

func TestAddTemperedGradMatchesFiniteDifference(t *testing.T) {
	theta := []float64{0.4, -0.7}
	for _, tc := range []struct {
		name    string
		temp    float64
		taken   int
		grouped bool
	}{
		{"t 0.6", 0.6, 1, false},
		{"t 1.5", 1.5, 2, false},
		{"t 0.6 grouped", 0.6, 1, true},
		{"t 1", 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testDecision(theta, tc.taken, tc.grouped)
			grad := make([]float64, 2)
			d.AddTemperedGrad(grad, tc.temp)
			for i := range theta {
				const h = 1e-6
				up, down := append([]float64(nil), theta...), append([]float64(nil), theta...)
				up[i] += h
				down[i] -= h
				du, dd := testDecision(up, tc.taken, tc.grouped), testDecision(down, tc.taken, tc.grouped)
				lu := ReportedLogprob([]Decision{du}, LogprobsTempered, tc.temp, Filters{})
				ld := ReportedLogprob([]Decision{dd}, LogprobsTempered, tc.temp, Filters{})
				if tc.temp == 1 {
					lu, ld = du.Logprob(), dd.Logprob()
				}
				want := (lu - ld) / (2 * h)
				if math.Abs(grad[i]-want) > 1e-5 {
					t.Errorf("grad[%d] = %v, finite difference %v", i, grad[i], want)
				}
			}
		})
	}
}

func TestReportedLogprobModes(t *testing.T) {
	d := testDecision([]float64{0.4, -0.7}, 1, false)
	ds := []Decision{d}
	raw := math.Log(d.Probs[1])
	cases := []struct {
		name string
		mode LogprobsMode
		temp float64
		f    Filters
		want float64
	}{
		{"raw ignores temperature", LogprobsRaw, 0.5, Filters{}, raw},
		{"processed at t 1 unfiltered is raw", LogprobsProcessed, 1, Filters{}, raw},
		{"top_k 1 on the taken outcome", LogprobsProcessed, 1, Filters{TopK: 1}, 0},
		{"tempered ignores filters", LogprobsTempered, 1, Filters{TopK: 1}, raw},
	}
	if d.Probs[1] < d.Probs[0] || d.Probs[1] < d.Probs[2] {
		t.Fatalf("test decision: option 1 is not the most probable (%v)", d.Probs)
	}
	for _, tc := range cases {
		if got := ReportedLogprob(ds, tc.mode, tc.temp, tc.f); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Tempering at t < 1 sharpens: the most probable outcome gains.
	if got := ReportedLogprob(ds, LogprobsProcessed, 0.5, Filters{}); !(got > raw) {
		t.Errorf("processed at t 0.5: %v, want above raw %v", got, raw)
	}
}

func TestKeptOutcomes(t *testing.T) {
	s := []float64{0.1, 0.5, 0.3, 0.1}
	cases := []struct {
		name string
		f    Filters
		want []bool
	}{
		{"top_k 2", Filters{TopK: 2}, []bool{false, true, true, false}},
		{"top_p 0.7", Filters{TopP: 0.7}, []bool{false, true, true, false}},
		{"top_p 0.4", Filters{TopP: 0.4}, []bool{false, true, false, false}},
		{"min_p 0.5", Filters{MinP: 0.5}, []bool{false, true, true, false}},
		{"min_p 0.1", Filters{MinP: 0.1}, []bool{true, true, true, true}},
	}
	for _, tc := range cases {
		got := keptOutcomes(s, tc.f)
		for i := range s {
			if got[i] != tc.want[i] {
				t.Errorf("%s: kept %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
