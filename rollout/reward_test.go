package rollout

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDefaultRewardWeights(t *testing.T) {
	w := DefaultRewardWeights()
	want := RewardWeights{Alpha1: 0.1, Alpha2: 0.9, Beta1: 0.1, Beta2: 0.4, Beta3: 0.5}
	if w != want {
		t.Fatalf("DefaultRewardWeights() = %+v, want %+v", w, want)
	}
	if err := w.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
}

func TestRewardWeightsValidate(t *testing.T) {
	tests := []struct {
		name string
		w    RewardWeights
		bad  string
	}{
		{"negative", RewardWeights{Alpha1: -0.1, Alpha2: 1, Beta1: 1}, "alpha1"},
		{"nan", RewardWeights{Alpha1: 1, Beta1: 1, Beta3: math.NaN()}, "beta3"},
		{"inf", RewardWeights{Alpha1: 1, Beta2: math.Inf(1)}, "beta2"},
		{"main all zero", RewardWeights{Beta1: 1}, "alpha1 and alpha2"},
		{"sub all zero", RewardWeights{Alpha2: 1}, "beta1, beta2 and beta3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.w.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tt.bad)
			}
		})
	}
}

func TestMainAndSubReward(t *testing.T) {
	w := DefaultRewardWeights()
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"main correct", w.MainReward(true, 1), 1.0},
		{"main wrong", w.MainReward(true, 0), 0.1},
		{"main half", w.MainReward(true, 0.5), 0.1 + 0.45},
		{"main invalid format", w.MainReward(false, 1), 0},
		{"main clamps above 1", w.MainReward(true, 3), 1.0},
		{"main NaN counts 0", w.MainReward(true, math.NaN()), 0.1},
		{"sub all good", w.SubReward(true, 1, 1), 1.0},
		{"sub main wrong, expert 0.6", w.SubReward(true, 0, 0.6), 0.1 + 0.3},
		{"sub main right, expert 0", w.SubReward(true, 1, 0), 0.5},
		{"sub invalid format", w.SubReward(false, 1, 1), 0},
		{"sub clamps below 0", w.SubReward(true, -1, -1), 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if math.Abs(tt.got-tt.want) > 1e-12 {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestExpertFallback(t *testing.T) {
	tests := []struct {
		in       string
		want     ExpertFallback
		ok, okNo float64 // Expert(true, 0.7) and Expert(false, 0.7)
	}{
		{"", ExpertFallbackFormat, 1, 0},
		{"format", ExpertFallbackFormat, 1, 0},
		{"zero", ExpertFallbackZero, 0, 0},
		{"correct-main", ExpertFallbackCorrectMain, 0.7, 0.7},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			f, err := ParseExpertFallback(tt.in)
			if err != nil || f != tt.want {
				t.Fatalf("ParseExpertFallback(%q) = %q, %v; want %q", tt.in, f, err, tt.want)
			}
			if got := f.Expert(true, 0.7); got != tt.ok {
				t.Errorf("Expert(true, 0.7) = %v, want %v", got, tt.ok)
			}
			if got := f.Expert(false, 0.7); got != tt.okNo {
				t.Errorf("Expert(false, 0.7) = %v, want %v", got, tt.okNo)
			}
			if !strings.Contains(f.Describe(), string(f)) {
				t.Errorf("Describe() = %q does not name %q", f.Describe(), f)
			}
		})
	}
	if _, err := ParseExpertFallback("judge"); err == nil {
		t.Fatal("ParseExpertFallback(judge) = nil error, want an error")
	}
}

type fakeJudge struct {
	score float64
	err   error
}

func (j fakeJudge) Rate(context.Context, string, string) (float64, string, error) {
	return j.score, "raw:" + j.err2s(), j.err
}

func (j fakeJudge) err2s() string {
	if j.err != nil {
		return j.err.Error()
	}
	return "ok"
}

func TestExpertScore(t *testing.T) {
	ctx := context.Background()
	s, raw, err := ExpertScore(ctx, nil, ExpertFallbackFormat, "sub", "rep", true, 0)
	if s != 1 || raw != "" || err != nil {
		t.Fatalf("no judge: got %v %q %v, want 1 \"\" nil", s, raw, err)
	}
	s, raw, err = ExpertScore(ctx, fakeJudge{score: 1.4}, ExpertFallbackZero, "sub", "rep", true, 0)
	if s != 1 || raw != "raw:ok" || err != nil {
		t.Fatalf("judge: got %v %q %v, want 1 raw:ok nil", s, raw, err)
	}
	boom := errors.New("boom")
	_, _, err = ExpertScore(ctx, fakeJudge{err: boom}, ExpertFallbackZero, "sub", "rep", true, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("judge error: got %v, want wrapping %v", err, boom)
	}
}
