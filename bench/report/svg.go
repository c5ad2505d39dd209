package report

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// WriteSVG draws a horizontal bar chart of Avg Pass@1 by category (overall first, then every group of
// every breakdown), with a whisker from the worst to the best run. It is plain hand-written SVG.
func WriteSVG(w io.Writer, s Summary) error {
	type bar struct {
		label         string
		avg, min, max float64
	}
	bars := []bar{{"overall", s.Overall.AvgPass1, s.Overall.Min, s.Overall.Max}}
	for _, bd := range s.Breakdowns {
		for _, g := range bd.Groups {
			bars = append(bars, bar{bd.Dimension + " " + g.Key, g.Metrics.AvgPass1, g.Metrics.Min, g.Metrics.Max})
		}
	}
	const (
		left, width, rowH, top = 240.0, 400.0, 24.0, 40.0
	)
	height := top + rowH*float64(len(bars)) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", left+width+80, height)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="14" font-weight="bold">Avg Pass@1 by category%s</text>`+"\n", html.EscapeString(titleSuffix(s)))
	for i, br := range bars {
		y := top + rowH*float64(i)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+15, html.EscapeString(br.label))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.0f" fill="#4878a8"/>`+"\n", left, y+4, width*br.avg, rowH-8)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222"/>`+"\n", left+width*br.min, left+width*br.max, y+rowH/2, y+rowH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+width*br.max+6, y+15, pct(br.avg))
	}
	axisY := top + rowH*float64(len(bars)) + 4
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#888"/>`+"\n", left, left+width, axisY, axisY)
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%.0f%%</text>`+"\n", left+width*t, axisY+16, 100*t)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func titleSuffix(s Summary) string {
	if s.Benchmark == "" {
		return ""
	}
	return " — " + s.Benchmark
}
