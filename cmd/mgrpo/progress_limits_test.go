package main

import (
	"testing"

	"github.com/mgrpo/mgrpo/run"
)

func TestBarDescriptionShowsAutoLimits(t *testing.T) {
	got := barDescription(run.Progress{Step: 2, Done: 16, Total: 64, MeanReward: 0.5, Rate: 4,
		Limits: map[string]int64{"planner": 24, "executor": 18}})
	if want := "step 2 · reward 0.5 · 0 err · 4 rollouts/s · 12s left · limit executor 18 planner 24"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
