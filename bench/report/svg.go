package report

import (
	"fmt"
	"io"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// barErrors are the whiskers of the Avg Pass@1 bars: from the worst to the
// best run, around each bar's average, at row y.
type barErrors struct{ avg, min, max []float64 }

func (e barErrors) Len() int                        { return len(e.avg) }
func (e barErrors) XY(i int) (float64, float64)     { return e.avg[i], float64(i) }
func (e barErrors) XError(i int) (float64, float64) { return e.avg[i] - e.min[i], e.max[i] - e.avg[i] }

// WriteSVG draws a horizontal bar chart of Avg Pass@1 by category (overall
// first, then every group of every breakdown), with a whisker from the worst
// to the best run, through the same plotting code as the run curves.
func WriteSVG(w io.Writer, s Summary) error {
	labels := []string{"overall"}
	e := barErrors{avg: []float64{s.Overall.AvgPass1}, min: []float64{s.Overall.Min}, max: []float64{s.Overall.Max}}
	for _, bd := range s.Breakdowns {
		for _, g := range bd.Groups {
			labels = append(labels, bd.Dimension+" "+g.Key)
			e.avg, e.min, e.max = append(e.avg, g.Metrics.AvgPass1), append(e.min, g.Metrics.Min), append(e.max, g.Metrics.Max)
		}
	}
	// Rows are drawn bottom up; the overall bar goes on top.
	slices.Reverse(labels)
	slices.Reverse(e.avg)
	slices.Reverse(e.min)
	slices.Reverse(e.max)

	p := plot.New()
	p.Title.Text = "Avg Pass@1 by category" + titleSuffix(s)
	bars, err := plotter.NewBarChart(plotter.Values(e.avg), vg.Points(12))
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	bars.Horizontal = true
	bars.Color = palette[0]
	bars.LineStyle.Width = 0
	whiskers, err := plotter.NewXErrorBars(e)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	p.Add(plotter.NewGrid(), bars, whiskers)
	p.NominalY(labels...)
	p.X.Min, p.X.Max = 0, 1
	p.X.Label.Text = "Avg Pass@1 (whisker: worst to best run)"
	p.X.Tick.Marker = plot.TickerFunc(func(_, _ float64) []plot.Tick {
		ticks := make([]plot.Tick, 0, 5)
		for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
			ticks = append(ticks, plot.Tick{Value: t, Label: fmt.Sprintf("%.0f%%", 100*t)})
		}
		return ticks
	})
	height := vg.Length(len(labels))*6*vg.Millimeter + 3*vg.Centimeter
	return writePlots(w, [][]*plot.Plot{{p}}, 16*vg.Centimeter, height)
}

func titleSuffix(s Summary) string {
	if s.Benchmark == "" {
		return ""
	}
	return " — " + s.Benchmark
}
