package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/farm"
)

// progressReporter shows a run's progress: a line redrawn in place on a
// terminal, or a log line every logEvery otherwise.
type progressReporter struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	logger   *slog.Logger
	last     time.Time
	drawn    bool
}

// logEvery spaces the progress log lines written when stderr is not a
// terminal.
const logEvery = 10 * time.Second

func newProgressReporter(w io.Writer, logger *slog.Logger) *progressReporter {
	f, ok := w.(*os.File)
	return &progressReporter{w: w, logger: logger, terminal: ok && isatty.IsTerminal(f.Fd())}
}

// report is the farm's OnProgress hook.
func (p *progressReporter) report(pr farm.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[Kstep %d: %d/%d rollouts, mean reward %.3f, %d errors, %.1f rollouts/s",
			pr.Step, pr.Done, pr.Total, pr.MeanReward, pr.Errors, pr.Rate)
		p.drawn = true
		return
	}
	if pr.Done == pr.Total || time.Since(p.last) >= logEvery {
		p.last = time.Now()
		p.logger.Info("progress", "step", pr.Step, "done", pr.Done, "total", pr.Total,
			"mean_reward", fmt.Sprintf("%.3f", pr.MeanReward), "errors", pr.Errors, "rollouts_per_s", fmt.Sprintf("%.1f", pr.Rate))
	}
}

// done ends the redrawn line.
func (p *progressReporter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// printSummaries prints the end-of-run table.
func printSummaries(w io.Writer, out string, summaries []rollout.StepSummary, wall time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\trollouts\tfailed\taccuracy\tR_M\tR_S\tdbar\tplanner samples\texecutor samples\tdrift\ttool errors\trollouts/s\t")
	for _, s := range summaries {
		toolErrors := 0
		for _, n := range s.ToolErrors {
			toolErrors += n
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t%.1f\t\n", s.Step, s.Rollouts, s.FailedRollouts,
			s.Accuracy, s.MeanMainReward, s.MeanSubReward, s.DBar, s.PlannerSamples, s.ExecutorSamples, s.DriftEvents, toolErrors, s.RolloutsPerSecond)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d step(s) in %s; samples in %s\n", len(summaries), wall.Round(time.Millisecond), out)
}

// unwrapURLError returns the cause of a *url.Error, whose own text repeats
// the URL (with any credentials).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
