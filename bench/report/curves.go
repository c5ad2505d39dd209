package report

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/mgrpo/mgrpo/rollout"
)

// RunCurve is one run's step summaries, drawn as one line per panel.
type RunCurve struct {
	// Name labels the run in the legend (its directory, say).
	Name  string
	Steps []rollout.StepSummary
}

// curvePanels are the figures WriteCurves draws, one panel each.
var curvePanels = []struct {
	title string
	value func(s rollout.StepSummary) float64
}{
	{"mean main reward R_M", func(s rollout.StepSummary) float64 { return s.MeanMainReward }},
	{"accuracy", func(s rollout.StepSummary) float64 { return s.Accuracy }},
	{"mean sub reward R_S", func(s rollout.StepSummary) float64 { return s.MeanSubReward }},
	{"planner response tokens (mean)", func(s rollout.StepSummary) float64 {
		return s.ResponseTokens["planner"].Mean + s.ResponseTokens["single"].Mean
	}},
}

// palette gives runs distinguishable colours, in order.
var palette = []color.Color{
	color.RGBA{R: 0x48, G: 0x78, B: 0xa8, A: 0xff}, color.RGBA{R: 0xd0, G: 0x60, B: 0x30, A: 0xff},
	color.RGBA{R: 0x40, G: 0x98, B: 0x50, A: 0xff}, color.RGBA{R: 0x90, G: 0x50, B: 0xa0, A: 0xff},
	color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}, color.RGBA{R: 0xc0, G: 0xa0, B: 0x20, A: 0xff},
}

// curveCellW and curveCellH are the size of one panel of WriteCurves.
const (
	curveCellW = 16 * vg.Centimeter
	curveCellH = 7 * vg.Centimeter
)

// WriteCurves draws, for one or several runs, the per-step curves of the
// main and sub rewards, the accuracy and the planner's response length as
// an SVG figure of stacked panels sharing the step axis, one line per run.
func WriteCurves(w io.Writer, runs []RunCurve) error {
	plots, err := curvePlots(runs)
	if err != nil {
		return err
	}
	return writePlots(w, plots, curveCellW, curveCellH)
}

// curvePlots builds WriteCurves' panels, one row each.
func curvePlots(runs []RunCurve) ([][]*plot.Plot, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("curves: no runs")
	}
	plots := make([][]*plot.Plot, len(curvePanels))
	for i, panel := range curvePanels {
		p := plot.New()
		p.Title.Text = panel.title
		p.X.Label.Text = "step"
		p.Add(plotter.NewGrid())
		for r, run := range runs {
			pts := make(plotter.XYs, len(run.Steps))
			for j, s := range run.Steps {
				pts[j] = plotter.XY{X: float64(s.Step), Y: panel.value(s)}
			}
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, fmt.Errorf("curves: %s of %s: %w", panel.title, run.Name, err)
			}
			c := palette[r%len(palette)]
			line.Color, points.Color = c, c
			points.Shape = draw.CircleGlyph{}
			p.Add(line, points)
			if i == 0 {
				p.Legend.Add(run.Name, line, points)
			}
		}
		p.Legend.Top, p.Legend.Left = true, true
		makeLegendRoom(p, curveCellW, curveCellH)
		plots[i] = []*plot.Plot{p}
	}
	return plots, nil
}

// writePlots lays plots out in rows and columns of cells of the given size
// and writes them as one SVG document. The eval report's chart and the run
// curves both go through it.
func writePlots(w io.Writer, plots [][]*plot.Plot, cellW, cellH vg.Length) error {
	rows, cols := len(plots), 0
	for _, row := range plots {
		cols = max(cols, len(row))
	}
	canvas := vgsvg.New(cellW*vg.Length(cols), cellH*vg.Length(rows))
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadTop: vg.Millimeter, PadBottom: vg.Millimeter,
		PadLeft: vg.Millimeter, PadRight: vg.Millimeter, PadX: 4 * vg.Millimeter, PadY: 4 * vg.Millimeter}
	cells := plot.Align(plots, tiles, dc)
	for i, row := range plots {
		for j, p := range row {
			if p != nil {
				p.Draw(cells[i][j])
			}
		}
	}
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}
