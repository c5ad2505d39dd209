package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
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
func (p *progressReporter) report(pr farm.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.con.terminal {
		if pr.Done == pr.Total || time.Since(p.last) >= logEvery {
			p.last = time.Now()
			p.logger.Info("progress", "step", pr.Step, "done", pr.Done, "total", pr.Total,
				"mean_reward", fmt.Sprintf("%.3f", pr.MeanReward), "errors", pr.Errors, "rollouts_per_s", fmt.Sprintf("%.1f", pr.Rate))
		}
		return
	}
	if p.bar == nil || p.barStep != pr.Step {
		p.finishBar()
		p.bar = progressbar.NewOptions(pr.Total,
			progressbar.OptionSetWriter(p.con.bar()),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rollouts"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		p.barStep = pr.Step
	}
	p.bar.Describe(fmt.Sprintf("step %d · mean reward %.3f · %d errors", pr.Step, pr.MeanReward, pr.Errors))
	p.bar.Set(pr.Done)
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
	header   bool
	steps    int
	usage    rollout.Usage
}

// The table's columns: one format for the header and one for the rows, so
// rows printed one at a time stay aligned.
const (
	stepHeaderFormat = "%5s %9s %7s %9s %7s %7s %5s %16s %17s %6s %12s %8s %10s %11s %8s\n"
	stepRowFormat    = "%5d %9d %7d %9.3f %7.3f %7.3f %5d %16d %17d %6d %12d %7.1f%% %9.1f%% %11.1f %8.0f\n"
)

// row is the farm's OnStep hook.
func (t *stepTable) row(s rollout.StepSummary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.progress != nil {
		// The step's bar is complete; clear it before the row goes out.
		t.progress.done()
	}
	if !t.header {
		fmt.Fprintf(t.w, stepHeaderFormat, "step", "rollouts", "failed", "accuracy", "R_M", "R_S", "dbar",
			"planner samples", "executor samples", "drift", "tool errors", "trunc", "fmt errors", "rollouts/s", "tokens/s")
		t.header = true
	}
	toolErrors := 0
	for _, n := range s.ToolErrors {
		toolErrors += n
	}
	fmt.Fprintf(t.w, stepRowFormat, s.Step, s.Rollouts, s.FailedRollouts, s.Accuracy, s.MeanMainReward, s.MeanSubReward,
		s.DBar, s.PlannerSamples, s.ExecutorSamples, s.DriftEvents, toolErrors, 100*s.TruncationRate, 100*s.FormatErrorRate,
		s.RolloutsPerSecond, s.CompletionTokensPerSecond)
	if line := trainingLine(s); line != "" {
		fmt.Fprintln(t.w, line)
	}
	t.steps++
	t.usage.Add(s.Usage)
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
		for _, m := range []string{"loss", "loss:sum", "loss:mean", "kl", "clip_fraction"} {
			if v, ok := rec.Metrics[m]; ok {
				p += fmt.Sprintf(", %s %.4g", m, v)
			}
		}
		parts = append(parts, p+")")
	}
	line := fmt.Sprintf("      trained: %s; train %.2fs, sync %.2fs", strings.Join(parts, ", "), s.TrainSeconds, s.SyncSeconds)
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
	fmt.Fprintf(t.w, "usage: %d search requests, %d page fetches, %d judge answers, tokens (prompt/completion) %s; cost %.4f\n",
		u.SearchRequests, u.VisitRequests, u.JudgeCalls, tokensByRole(u), u.Cost)
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
