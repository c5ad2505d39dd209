package report

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// makeLegendRoom raises the top of p's Y axis so that the legend, drawn
// in the top-left corner of the data area, sits above every point (issue
// 50: in a two-run report it covered the first point) for a plot drawn
// w × h. Without entries it does nothing.
func makeLegendRoom(p *plot.Plot, w, h vg.Length) {
	c := draw.Canvas{Canvas: &recorder.Canvas{}, Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}
	legend := p.Legend.Rectangle(c).Size().Y
	if legend <= 0 {
		return
	}
	lo, hi := p.Y.Min, p.Y.Max
	if hi <= lo {
		hi = lo + 1
	}
	data := p.DataCanvas(c).Size().Y
	// The fraction of the data area's height the points may use: below
	// the legend, with a glyph's margin.
	free := 1 - float64(legend+3*vg.Millimeter)/float64(data)
	if free < 0.3 {
		free = 0.3 // a legend of many runs in a short panel: half the panel at least stays data
	}
	p.Y.Min, p.Y.Max = lo, lo+(hi-lo)/free
}
