package main

import (
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

func TestTrainingLineShowsAsynchronousCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		sum  rollout.StepSummary
		want []string
		not  []string
	}{
		{"on-policy", rollout.StepSummary{Training: map[string]rollout.RoleTraining{"planner": {Samples: 8, PreviousVersion: 2, Version: 3, SampledVersion: 2}}},
			[]string{"planner v2→v3 (8 samples)"}, []string{"sampled at", "stale", "restarted"}},
		{"a summed loss", rollout.StepSummary{Training: map[string]rollout.RoleTraining{"planner": {Samples: 8, PreviousVersion: 2, Version: 3,
			SampledVersion: 2, LossTokens: 1000, Metrics: map[string]float64{"loss:sum": -1835}}}},
			[]string{"planner v2→v3 (8 samples, loss per token -1.83)"}, []string{"loss:sum", "-1835"}},
		{"stale and restarted", rollout.StepSummary{RestartedRollouts: 3, Training: map[string]rollout.RoleTraining{"planner": {
			Samples: 4, PreviousVersion: 5, Version: 6, SampledVersion: 4, Staleness: 1, StaleSamples: 6, StaleGroups: 2, StaleDropped: 8}}},
			[]string{"sampled at v4", "6 stale in 2 groups, 8 dropped", "3 rollouts restarted at an update"}, nil},
	} {
		got := trainingLine(tc.sum)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q says %q", tc.name, got, w)
			}
		}
	}
}

func TestTrainingLineFits80Columns(t *testing.T) {
	sum := rollout.StepSummary{TrainSeconds: 1.514, SyncSeconds: 0.00516, Training: map[string]rollout.RoleTraining{
		"planner":  {Samples: 64, PreviousVersion: 1, Version: 2, SampledVersion: 1, LossTokens: 100, Metrics: map[string]float64{"loss:sum": -16.7}},
		"executor": {Samples: 192, PreviousVersion: 1, Version: 2, SampledVersion: 1, LossTokens: 100, Metrics: map[string]float64{"loss:sum": 5.01}}}}
	got := trainingLine(sum)
	lines := strings.Split(got, "\n")
	if len(lines) != 3 {
		t.Fatalf("want a line per role and one for the times:\n%s", got)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if !strings.HasPrefix(lines[0], "     trained: planner v1→v2 (") || !strings.Contains(lines[1], "executor v1→v2 (192 samples") ||
		!strings.Contains(lines[2], "train 1.51s, sync 0.00516s") {
		t.Errorf("unexpected layout:\n%s", got)
	}
}
