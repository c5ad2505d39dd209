package main

import (
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
)

// TestProgressShowsDriftAndHistoryEdits: the bar names drift and history
// edits once either happens, and the step table says under a row how many
// history edits split trajectories, apart from the drift column.
func TestProgressShowsDriftAndHistoryEdits(t *testing.T) {
	if got := barDescription(farm.Progress{Step: 1, Done: 4, Total: 8, MeanReward: 0.5}); strings.Contains(got, "drift") {
		t.Errorf("bar %q names drift with none", got)
	}
	got := barDescription(farm.Progress{Step: 1, Done: 4, Total: 8, MeanReward: 0.5, HistoryEdits: 3})
	if want := "step 1 · reward 0.5 · 0 err · drift 0 · 3 hist-edit"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if line := splitLine(rollout.StepSummary{}); line != "" {
		t.Errorf("split line %q for a step without splits", line)
	}
	line := splitLine(rollout.StepSummary{HistoryEdits: 2, DriftEvents: 1})
	if !strings.Contains(line, "2 history edit(s)") || len(line) > 80 {
		t.Errorf("split line %q, want the 2 history edits within 80 columns", line)
	}
	var b strings.Builder
	tab := &stepTable{w: &b, width: 120}
	tab.row(rollout.StepSummary{Step: 1, HistoryEdits: 2})
	if !strings.Contains(b.String(), "split: 2 history edit(s)") {
		t.Errorf("step table\n%s\nwant the split line under the row", b.String())
	}
}
