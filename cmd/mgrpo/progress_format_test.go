package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

func TestBarDescriptionShowsOnlyWhatIsKnown(t *testing.T) {
	if got := barDescription(run.Progress{Step: 1, Total: 64, MeanReward: 0.1}); got != "step 1" {
		t.Errorf("before any rollout: %q, want only the step (no reward, rate or time left yet)", got)
	}
	got := barDescription(run.Progress{Step: 2, Done: 16, Total: 64, MeanReward: 0.7843750000000002, Errors: 1, Rate: 4})
	if want := "step 2 · reward 0.784 · 1 err · 4 rollouts/s · 12s left"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSig3(t *testing.T) {
	for x, want := range map[float64]string{0.7843750000000002: "0.784", 1: "1", 0: "0", 123.456: "123", 1835.4: "1835", -0.000123456: "-0.000123"} {
		if got := sig3(x); got != want {
			t.Errorf("sig3(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestStepTableFits100Columns(t *testing.T) {
	var out bytes.Buffer
	table := &stepTable{w: &out}
	table.row(rollout.StepSummary{Step: 12, Rollouts: 10000, FailedRollouts: 123, Accuracy: 0.7843750000000002, MeanMainReward: 0.7059375,
		MeanSubReward: 0.61234, DBar: 8, PlannerSamples: 10000, ExecutorSamples: 80000, DriftEvents: 12, TruncationRate: 0.5, FormatErrorRate: 1,
		RolloutsPerSecond: 123.456, CompletionTokensPerSecond: 98765.4})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and a row:\n%s", out.String())
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if h, r := strings.Fields(lines[0]), strings.Fields(lines[1]); len(h) != len(r)+1 { // "samples P/E" is two words
		t.Errorf("header %d fields, row %d:\n%s", len(h), len(r), out.String())
	}
	if !strings.Contains(lines[1], " 0.784 ") || strings.Contains(lines[1], "0.78437") {
		t.Errorf("the accuracy is not rounded to 3 significant digits: %q", lines[1])
	}
}

func TestStepTableNarrowFits80Columns(t *testing.T) {
	var out bytes.Buffer
	table := &stepTable{w: &out, width: 80}
	table.row(rollout.StepSummary{Step: 12, Rollouts: 10000, FailedRollouts: 123, Accuracy: 0.7843750000000002, MeanMainReward: 0.7059375,
		MeanSubReward: 0.61234, DBar: 8, PlannerSamples: 10000, ExecutorSamples: 80000, DriftEvents: 12, TruncationRate: 0.5, FormatErrorRate: 1,
		RolloutsPerSecond: 123.456, CompletionTokensPerSecond: 98765.4})
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and a row:\n%s", out.String())
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("a line of %d columns at a width of 80: %q", n, l)
		}
	}
	if h, r := strings.Fields(lines[0]), strings.Fields(lines[1]); len(h) != len(r) {
		t.Errorf("header %d fields, row %d:\n%s", len(h), len(r), out.String())
	}
	for _, want := range []string{" 0.784 ", " 10000/80000 ", " 50.0% ", "100.0%"} {
		if !strings.Contains(lines[1]+" ", want) {
			t.Errorf("the narrow row lacks %q: %q", want, lines[1])
		}
	}
	var wide bytes.Buffer
	(&stepTable{w: &wide, width: 120}).row(rollout.StepSummary{Step: 1})
	if !strings.Contains(wide.String(), "tok/s") {
		t.Errorf("a 120-column terminal should get the full table:\n%s", wide.String())
	}
}
