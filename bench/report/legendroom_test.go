package report

import (
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestLegendCoversNoPoint draws the curves of two runs whose first point
// is the highest, in the legend's top-left corner (issue 50: the legend
// covered it), and checks that no point of the panel with the legend lies
// under it.
func TestLegendCoversNoPoint(t *testing.T) {
	steps := func(rewards ...float64) []rollout.StepSummary {
		var out []rollout.StepSummary
		for i, r := range rewards {
			out = append(out, rollout.StepSummary{Step: i + 1, MeanMainReward: r})
		}
		return out
	}
	runs := []RunCurve{{Name: "runs/base", Steps: steps(0.9, 0.5, 0.6, 0.7)}, {Name: "runs/base-dbar2", Steps: steps(0.85, 0.4, 0.5, 0.8)}}
	plots, err := curvePlots(runs)
	if err != nil {
		t.Fatal(err)
	}
	p := plots[0][0]
	c := draw.Canvas{Canvas: &recorder.Canvas{}, Rectangle: vg.Rectangle{Max: vg.Point{X: curveCellW, Y: curveCellH}}}
	data := p.DataCanvas(c)
	size := p.Legend.Rectangle(c).Size()
	// The legend is drawn in the data area's top-left corner.
	legend := vg.Rectangle{Min: vg.Point{X: data.Min.X, Y: data.Max.Y - size.Y}, Max: vg.Point{X: data.Min.X + size.X, Y: data.Max.Y}}
	x, y := p.Transforms(&data)
	for _, r := range runs {
		for _, s := range r.Steps {
			pt := vg.Point{X: x(float64(s.Step)), Y: y(s.MeanMainReward)}
			if pt.X >= legend.Min.X && pt.X <= legend.Max.X && pt.Y >= legend.Min.Y && pt.Y <= legend.Max.Y {
				t.Errorf("%s step %d (%.2f) at %v lies under the legend %v", r.Name, s.Step, s.MeanMainReward, pt, legend)
			}
		}
	}
	if p.Y.Max <= 0.9 {
		t.Errorf("Y max %v: no room above the highest point", p.Y.Max)
	}
}
