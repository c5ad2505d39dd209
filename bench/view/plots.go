package view

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The pages' plots are small inline SVG drawn here rather than
// bench/report's figure: four of them fit in one row of a laptop screen,
// leaving the step table on the first screen, and their axes are fitted
// to the data (a one-step run shows one labelled point on a narrow axis,
// not a dot on 0–1.6).
const (
	plotW, plotH = 270, 130
	// The plot area's margins: tick labels on the left and below, the
	// title above.
	padL, padR, padT, padB = 44, 10, 20, 22
)

// fitRange returns an axis range around vals, padded so that no point
// sits on the frame; a flat series gets a narrow range around its value.
func fitRange(vals []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo > hi {
		return 0, 1
	}
	if hi-lo < 1e-9 {
		pad := max(math.Abs(lo)*0.1, 0.05)
		return lo - pad, hi + pad
	}
	pad := (hi - lo) * 0.08
	return lo - pad, hi + pad
}

// num formats a tick or a value for reading: 3 significant digits.
func num(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	s := strconv.FormatFloat(x, 'g', 3, 64)
	if strings.Contains(s, "e") && math.Abs(x) >= 1e-3 && math.Abs(x) < 1e6 {
		s = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return s
}

// svgFrame starts an SVG of the plot size with its title.
func svgFrame(b *strings.Builder, class, title string, attrs string) {
	fmt.Fprintf(b, `<svg class="plot %s" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s"%s>`,
		class, plotW, plotH, plotW, plotH, template.HTMLEscapeString(title), attrs)
	fmt.Fprintf(b, `<text class="title" x="%d" y="13">%s</text>`, padL, template.HTMLEscapeString(title))
	fmt.Fprintf(b, `<rect class="frame" x="%d" y="%d" width="%d" height="%d"/>`, padL, padT, plotW-padL-padR, plotH-padT-padB)
}

// scale maps v in [lo, hi] onto [a, b].
func scale(v, lo, hi, a, b float64) float64 {
	if hi == lo {
		return (a + b) / 2
	}
	return a + (v-lo)/(hi-lo)*(b-a)
}

// yTicks writes three tick labels of the y range.
func yTicks(b *strings.Builder, lo, hi float64) {
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		y := scale(v, lo, hi, plotH-padB, padT)
		fmt.Fprintf(b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+4, num(v))
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, plotW-padR, y, y)
	}
}

// linePlot draws ys against the steps xs. Its data-lo and data-hi
// attributes are the y axis's range, data-n the number of points.
func linePlot(id, title string, xs []int, ys []float64) template.HTML {
	var b strings.Builder
	ylo, yhi := fitRange(ys)
	fx := make([]float64, len(xs))
	for i, x := range xs {
		fx[i] = float64(x)
	}
	xlo, xhi := 0.0, 1.0
	if len(xs) > 0 {
		xlo, xhi = fx[0]-0.5, fx[len(fx)-1]+0.5
	}
	svgFrame(&b, "line", title, fmt.Sprintf(` id="%s" data-n="%d" data-lo="%s" data-hi="%s"`, id, len(ys), num(ylo), num(yhi)))
	yTicks(&b, ylo, yhi)
	// Step ticks: at most six, evenly picked.
	stride := max(1, (len(xs)+5)/6)
	for i := 0; i < len(xs); i += stride {
		x := scale(fx[i], xlo, xhi, padL, plotW-padR)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%d</text>`, x, plotH-padB+14, xs[i])
	}
	var pts []string
	for i, y := range ys {
		px, py := scale(fx[i], xlo, xhi, padL, plotW-padR), scale(y, ylo, yhi, plotH-padB, padT)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		fmt.Fprintf(&b, `<circle class="pt" cx="%.1f" cy="%.1f" r="2.5"><title>step %d: %s</title></circle>`, px, py, xs[i], num(y))
	}
	if len(pts) > 1 {
		fmt.Fprintf(&b, `<polyline class="series" points="%s"/>`, strings.Join(pts, " "))
	}
	if len(ys) == 1 {
		px, py := scale(fx[0], xlo, xhi, padL, plotW-padR), scale(ys[0], ylo, yhi, plotH-padB, padT)
		fmt.Fprintf(&b, `<text class="value" x="%.1f" y="%.1f">%s</text>`, px+6, py-4, num(ys[0]))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// histBins is the number of bins of a histogram with spread-out values.
const histBins = 10

// histogram draws the distribution of vals; data-counts lists the bars'
// counts (comma-separated), data-n the number of values. Equal values
// make one bar at that value.
func histogram(id, title string, vals []float64) template.HTML {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	bins := histBins
	if len(vals) == 0 || hi-lo < 1e-12 {
		bins = 1
	}
	counts := make([]int, bins)
	for _, v := range vals {
		i := 0
		if bins > 1 {
			i = min(int((v-lo)/(hi-lo)*float64(bins)), bins-1)
		}
		counts[i]++
	}
	cs := make([]string, bins)
	top := 1
	for i, c := range counts {
		cs[i], top = strconv.Itoa(c), max(top, c)
	}
	var b strings.Builder
	svgFrame(&b, "hist", title, fmt.Sprintf(` id="%s" data-n="%d" data-counts="%s"`, id, len(vals), strings.Join(cs, ",")))
	w := float64(plotW-padL-padR) / float64(bins)
	for i, c := range counts {
		h := float64(c) / float64(top) * float64(plotH-padT-padB-12)
		x := float64(padL) + float64(i)*w
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%d</title></rect>`,
			x+1, float64(plotH-padB)-h, max(w-2, 1), h, c)
		if c > 0 {
			fmt.Fprintf(&b, `<text class="count" x="%.1f" y="%.1f" text-anchor="middle">%d</text>`, x+w/2, float64(plotH-padB)-h-2, c)
		}
	}
	if len(vals) > 0 {
		if bins == 1 {
			fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="middle">all %s</text>`, (plotW+padL-padR)/2, plotH-padB+14, num(lo))
		} else {
			fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="start">%s</text>`, padL, plotH-padB+14, num(lo))
			fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, plotW-padR, plotH-padB+14, num(hi))
		}
	}
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%d</text>`, padL-4, padT+10, top)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
