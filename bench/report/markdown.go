package report

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes report.md: the overall metrics, one table per breakdown, and a link to the
// chart file named chart (relative to the report).
func WriteMarkdown(w io.Writer, s Summary, chart string) error {
	var b strings.Builder
	title := "Evaluation report"
	if s.Benchmark != "" {
		title += ": " + s.Benchmark
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	o := s.Overall
	fmt.Fprintf(&b, "%d questions × %d runs (%d results).\n\n", o.Questions, o.Runs, o.Results)
	b.WriteString("| metric | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| Avg Pass@1 | %s ± %s (min %s, max %s) |\n", pct(o.AvgPass1), pct(o.Std), pct(o.Min), pct(o.Max))
	fmt.Fprintf(&b, "| Pass@%d | %s |\n", o.K, pct(o.PassK))
	fmt.Fprintf(&b, "| Best Pass@1 | %s |\n", pct(o.BestPass1))
	fmt.Fprintf(&b, "| Majority vote | %s |\n", pct(o.MajorityVote))
	fmt.Fprintf(&b, "| Per-run accuracy | %s |\n", pcts(o.PerRun))
	fmt.Fprintf(&b, "| Correct / wrong / errors / judge errors | %d / %d / %d / %d |\n", o.Correct, o.Wrong, o.Errors, o.JudgeErrors)
	fmt.Fprintf(&b, "| Mean turns / delegations / tool calls | %.2f / %.2f / %.2f |\n", o.MeanTurns, o.MeanDelegations, o.MeanToolCalls)
	fmt.Fprintf(&b, "| Mean tokens / latency | %.0f / %.2f s |\n\n", o.MeanTokens, o.MeanLatency)
	fmt.Fprintf(&b, "![accuracy by category](%s)\n\n", chart)
	for _, bd := range s.Breakdowns {
		fmt.Fprintf(&b, "## By %s\n\n", bd.Dimension)
		b.WriteString("| " + bd.Dimension + " | questions | Avg Pass@1 | std | Pass@k | Best Pass@1 | majority | wrong | errors | judge errors |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range bd.Groups {
			m := g.Metrics
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d | %d | %d |\n", g.Key, m.Questions,
				pct(m.AvgPass1), pct(m.Std), pct(m.PassK), pct(m.BestPass1), pct(m.MajorityVote), m.Wrong, m.Errors, m.JudgeErrors)
		}
		b.WriteString("\n")
	}
	b.WriteString("Accuracy counts every result; errors and judge errors are not wrong answers but count as not correct. " +
		"Std is the population standard deviation of per-run accuracy.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func pcts(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = pct(x)
	}
	return strings.Join(parts, ", ")
}
