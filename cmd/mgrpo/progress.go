package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/run"
)

// progressReporter shows a run's progress: on a terminal, a progress bar
// per step (rollouts done of total, rate, ETA, mean reward so far,
// errors), redrawn in place; otherwise a log line every logEvery and at the
// end of each step.
type progressReporter struct {
	mu      sync.Mutex
	con     *console
	logger  *slog.Logger
	last    time.Time
	bar     *progressbar.ProgressBar
	barStep int
}

// logEvery spaces the progress log lines written when the output is not a
// terminal.
const logEvery = 10 * time.Second

// newProgressReporter reports on con, drawing a bar when it is a terminal.
func newProgressReporter(con *console, logger *slog.Logger) *progressReporter {
	return &progressReporter{con: con, logger: logger}
}

// report is the farm's OnProgress hook.
func (p *progressReporter) report(pr run.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.con.terminal {
		if pr.Done == pr.Total || time.Since(p.last) >= logEvery {
			p.last = time.Now()
			if pr.Done == 0 {
				p.logger.Info("progress", "step", pr.Step, "done", 0, "total", pr.Total)
				return
			}
			attrs := []any{"step", pr.Step, "done", pr.Done, "total", pr.Total,
				"mean_reward", sig3(pr.MeanReward), "errors", pr.Errors, "rollouts_per_s", sig3(pr.Rate)}
			if pr.Drifts > 0 || pr.HistoryEdits > 0 {
				attrs = append(attrs, "drift", pr.Drifts, "history_edits", pr.HistoryEdits)
			}
			if pr.Limits != nil {
				attrs = append(attrs, "concurrency_limit", limitsText(pr.Limits))
			}
			p.logger.Info("progress", attrs...)
		}
		return
	}
	if p.bar == nil || p.barStep != pr.Step {
		p.finishBar()
		p.bar = progressbar.NewOptions(pr.Total,
			progressbar.OptionSetWriter(p.con.bar()),
			progressbar.OptionShowCount(),
			// The rate and the time left are in the description, labelled,
			// and only once rollouts are done.
			progressbar.OptionSetDescription(barDescription(pr)),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionSetWidth(p.barWidth(pr)),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		p.barStep = pr.Step
	}
	// Set first: Describe draws, and should draw the new count.
	p.bar.Set(pr.Done)
	p.bar.Describe(barDescription(pr))
}

// barDescription is the text before the bar: the step, and once rollouts
// are done the mean reward so far, the errors and the time left.
func barDescription(pr run.Progress) string {
	d := fmt.Sprintf("step %d", pr.Step)
	if pr.Done == 0 {
		return d
	}
	d += " · reward " + sig3(pr.MeanReward) + fmt.Sprintf(" · %d err", pr.Errors)
	if pr.Drifts > 0 || pr.HistoryEdits > 0 {
		// Shown once either happens: drift is a bug to see at once, history
		// edits what the agents did to their conversations.
		d += fmt.Sprintf(" · drift %d · %d hist-edit", pr.Drifts, pr.HistoryEdits)
	}
	if pr.Rate > 0 {
		d += " · " + sig3(pr.Rate) + " rollouts/s"
	}
	if pr.Rate > 0 && pr.Done < pr.Total {
		left := time.Duration(float64(pr.Total-pr.Done) / pr.Rate * float64(time.Second))
		d += " · " + left.Round(time.Second).String() + " left"
	}
	if pr.Limits != nil {
		d += " · limit " + limitsText(pr.Limits)
	}
	return d
}

// limitsText writes the adaptive request limits of --concurrency auto by
// role, in a fixed order: "planner 24 executor 18".
func limitsText(limits map[string]int64) string {
	roles := make([]string, 0, len(limits))
	for r := range limits {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	parts := make([]string, 0, len(roles))
	for _, r := range roles {
		parts = append(parts, fmt.Sprintf("%s %d", r, limits[r]))
	}
	return strings.Join(parts, " ")
}

// barWidth is the width of the bar itself so that the whole line fits the
// terminal (a line wider than the terminal wraps, and every redraw would
// add a line): what is left of the terminal's width after the description
// at its longest and the counters.
func (p *progressReporter) barWidth(pr run.Progress) int {
	cols := p.con.width()
	if cols <= 0 {
		return 24
	}
	longest := run.Progress{Step: pr.Step, Done: 1, Total: pr.Total, Errors: pr.Total, MeanReward: -0.123, Rate: 0.00123, Limits: pr.Limits}
	digits := len(fmt.Sprint(pr.Total))
	// " 100% |" + bar + "| (" + done/total + ")" and a column free, so the
	// cursor never wraps.
	fixed := len([]rune(barDescription(longest))) + 7 + 4 + 2*digits + 1
	return max(cols-fixed, 5)
}

// sig3 writes x with three significant digits (whole numbers from 1000 on).
func sig3(x float64) string {
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// finishBar ends the current bar, clearing its line; p.mu is held.
func (p *progressReporter) finishBar() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// done ends the progress display.
func (p *progressReporter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishBar()
}

// stepTable prints the run's summary table one row per step as each step
// ends, so a long run shows its results as it goes.
type stepTable struct {
	mu       sync.Mutex
	w        io.Writer
	progress *progressReporter
	// width is the terminal's columns when w is one (0: not a terminal,
	// or unknown); below fullTableColumns the narrow table is printed.
	width  int
	header bool
	steps  int
	usage  rollout.Usage
}

// The table's columns, one format for the header and one for the rows so
// that rows printed one at a time stay aligned; a row fits 99 columns.
// Rewards and rates have three significant digits. A terminal narrower
// than fullTableColumns gets the narrow table: the same columns but the
// two rates (the run's last line gives its time), in 75 columns.
const (
	stepHeaderFormat = "%4s %8s %6s %5s %5s %5s %4s %13s %5s %7s %6s %6s %6s %6s\n"
	stepRowFormat    = "%4d %8d %6d %5s %5s %5s %4d %13s %5d %7d %5.1f%% %5.1f%% %6s %6s\n"
	fullTableColumns = 100

	narrowHeaderFormat = "%4s %5s %4s %5s %5s %5s %4s %9s %5s %7s %5s %6s\n"
	narrowRowFormat    = "%4d %5d %4d %5s %5s %5s %4d %9s %5d %7d %4.1f%% %5.1f%%\n"
)

// row is the farm's OnStep hook.
func (t *stepTable) row(s rollout.StepSummary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.progress != nil {
		// The step's bar is complete; clear it before the row goes out.
		t.progress.done()
	}
	narrow := t.width > 0 && t.width < fullTableColumns
	if !t.header {
		if narrow {
			fmt.Fprintf(t.w, narrowHeaderFormat, "step", "rolls", "fail", "acc", "R_M", "R_S", "dbar",
				"P/E", "drift", "toolerr", "trunc", "fmterr")
		} else {
			fmt.Fprintf(t.w, stepHeaderFormat, "step", "rollouts", "failed", "acc", "R_M", "R_S", "dbar",
				"samples P/E", "drift", "toolerr", "trunc", "fmterr", "roll/s", "tok/s")
		}
		t.header = true
	}
	toolErrors := 0
	for _, n := range s.ToolErrors {
		toolErrors += n
	}
	samples := fmt.Sprintf("%d/%d", s.PlannerSamples, s.ExecutorSamples)
	if narrow {
		fmt.Fprintf(t.w, narrowRowFormat, s.Step, s.Rollouts, s.FailedRollouts, sig3(s.Accuracy), sig3(s.MeanMainReward), sig3(s.MeanSubReward),
			s.DBar, samples, s.DriftEvents, toolErrors, 100*s.TruncationRate, 100*s.FormatErrorRate)
	} else {
		fmt.Fprintf(t.w, stepRowFormat, s.Step, s.Rollouts, s.FailedRollouts, sig3(s.Accuracy), sig3(s.MeanMainReward), sig3(s.MeanSubReward),
			s.DBar, samples, s.DriftEvents, toolErrors, 100*s.TruncationRate, 100*s.FormatErrorRate,
			sig3(s.RolloutsPerSecond), sig3(s.CompletionTokensPerSecond))
	}
	if line := failureLine(s); line != "" {
		fmt.Fprintln(t.w, line)
	}
	if line := splitLine(s); line != "" {
		fmt.Fprintln(t.w, line)
	}
	if line := trainingLine(s); line != "" {
		fmt.Fprintln(t.w, line)
	}
	t.steps++
	t.usage.Add(s.Usage)
}

// failureLine gives a step's infrastructure failure counts under its row
// when it met any ("" otherwise: the failed and fmterr columns already say
// what the model did): infra failures by cause, the rollouts retried, the
// groups excluded, tool outages, and then the model failures by reason.
func failureLine(s rollout.StepSummary) string {
	if len(s.InfraFailures) == 0 && s.RolloutRetries == 0 && s.ExcludedGroups == 0 && s.ToolOutages == 0 {
		return ""
	}
	byCause := func(m map[string]int) string {
		n, parts := 0, []string{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			n += m[k]
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		if n == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("     failures: infra %s, %d retries, %d groups excluded, %d tool outages; model %s",
		byCause(s.InfraFailures), s.RolloutRetries, s.ExcludedGroups, s.ToolOutages, byCause(s.ModelFailures))
}

// trainingLine describes a trained step's training under its row
// ("" for a rollout run): per role the versions, the trainer's loss and
// KL or clip fraction when it reports them, and the time split.
func trainingLine(s rollout.StepSummary) string {
	if len(s.Training) == 0 {
		return ""
	}
	var parts []string
	for _, role := range []string{string(rollout.RolePlanner), string(rollout.RoleExecutor)} {
		rec, ok := s.Training[role]
		if !ok {
			continue
		}
		p := fmt.Sprintf("%s v%d→v%d (%d samples", role, rec.PreviousVersion, rec.Version, rec.Samples)
		if rec.Staleness > 0 {
			p += fmt.Sprintf(", sampled at v%d", rec.SampledVersion)
		}
		if rec.StaleSamples > 0 {
			p += fmt.Sprintf(", %d stale in %d groups, %d dropped", rec.StaleSamples, rec.StaleGroups, rec.StaleDropped)
		}
		if sum, ok := rec.Metrics["loss:sum"]; ok && rec.LossTokens > 0 {
			p += ", loss per token " + sig3(sum/float64(rec.LossTokens))
		}
		for _, m := range []struct{ key, label string }{{"loss", "loss"}, {"loss:mean", "loss per token"},
			{"kl", "KL"}, {"clip_fraction", "clipped"}} {
			if v, ok := rec.Metrics[m.key]; ok {
				p += ", " + m.label + " " + sig3(v)
			}
		}
		parts = append(parts, p+")")
	}
	// A role a line, the times on their own: each fits 80 columns.
	const indent = "\n              "
	line := fmt.Sprintf("     trained: %s;%strain %ss, sync %ss", strings.Join(parts, ","+indent), indent, sig3(s.TrainSeconds), sig3(s.SyncSeconds))
	if s.RestartedRollouts > 0 {
		line += fmt.Sprintf("; %d rollouts restarted at an update", s.RestartedRollouts)
	}
	return line
}

// end prints the run's closing line.
func (t *stepTable) end(out string, wall time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%d step(s) in %s; samples in %s\n", t.steps, wall.Round(time.Millisecond), out)
	u := t.usage
	// Two lines, each fitting 80 columns for a run of millions of tokens.
	fmt.Fprintf(t.w, "usage: %d search requests, %d page fetches, %d judge answers; cost %.4f\n",
		u.SearchRequests, u.VisitRequests, u.JudgeCalls, u.Cost)
	fmt.Fprintf(t.w, "tokens (prompt/completion): %s\n", tokensByRole(u))
}

// tokensByRole renders usage's tokens as "planner 1200/300, executor …".
func tokensByRole(u rollout.Usage) string {
	roles := slices.Sorted(maps.Keys(u.PromptTokens))
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = fmt.Sprintf("%s %d/%d", r, u.PromptTokens[r], u.CompletionTokens[r])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// splitLine is the line under a step's row that says why trajectories
// were split into several samples, empty when none was: the history edits
// gateway agents made (a count apart from the drift column) and the
// context cuts.
func splitLine(s rollout.StepSummary) string {
	if s.HistoryEdits == 0 && s.ContextCuts == 0 {
		return ""
	}
	line := fmt.Sprintf("     split: %d history edit(s)", s.HistoryEdits)
	if s.ContextCuts > 0 {
		line += fmt.Sprintf(", %d context cut(s)", s.ContextCuts)
	}
	return line + " (new samples, not drift; see docs/gateway.md)"
}
