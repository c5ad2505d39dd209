package report

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
)

func TestWriteCurves(t *testing.T) {
	steps := func(rewards ...float64) []rollout.StepSummary {
		out := make([]rollout.StepSummary, len(rewards))
		for i, r := range rewards {
			out[i] = rollout.StepSummary{Step: i + 1, MeanMainReward: r, Accuracy: r, MeanSubReward: r / 2,
				ResponseTokens: map[string]rollout.LengthStats{"planner": {Count: 4, Mean: 100 * r}}}
		}
		return out
	}
	var b strings.Builder
	if err := WriteCurves(&b, []RunCurve{{Name: "run-alpha", Steps: steps(0.2, 0.4, 0.5)}, {Name: "run-beta", Steps: steps(0.3, 0.3, 0.6)}}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
	}
	for _, want := range []string{"<svg", "mean main reward", "accuracy", "mean sub reward", "planner response tokens", "run-alpha", "run-beta", "step"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	if err := WriteCurves(&b, nil); err == nil {
		t.Error("no runs: no error")
	}
}
