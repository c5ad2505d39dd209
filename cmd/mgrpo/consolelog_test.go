package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestTerminalLogFormat checks the log a person sees at a terminal: one
// readable format, numbers rounded, the step table's rows not repeated;
// text to a pipe and json keep every record as structured lines.
func TestTerminalLogFormat(t *testing.T) {
	var tty bytes.Buffer
	logger, err := newLogger(&console{w: &tty, terminal: true}, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	logger.With("run", "demo").WithGroup("pool").Warn("endpoint ejected", "failures", 3, "after", 1500*time.Millisecond)
	logger.Info("dbar", "step", 2, "dbar", 2, "source", "previous step")
	logger.Info("step done", "step", 2, "mean_main_reward", 0.7843750000000002)
	logger.Debug("hidden")
	got := tty.String()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("terminal log:\n%s\nwant 2 lines (the step done line is the table's row)", got)
	}
	for i, want := range []string{" WARN endpoint ejected: run demo, pool.failures 3, pool.after 1.5s", " dbar: step 2, dbar 2, source previous step"} {
		if !strings.HasSuffix(lines[i], want) || len(lines[i]) != len("15:04:05")+len(want) {
			t.Errorf("line %d %q, want HH:MM:SS then %q", i, lines[i], want)
		}
	}
	for _, format := range []string{"text", "json"} {
		var pipe bytes.Buffer
		logger, err := newLogger(&console{w: &pipe}, "info", format)
		if err != nil {
			t.Fatal(err)
		}
		logger.Info("step done", "step", 2, "mean_main_reward", 0.78)
		if !strings.Contains(pipe.String(), "step done") || !strings.Contains(pipe.String(), "mean_main_reward") {
			t.Errorf("%s to a pipe: %q, want the structured step done record", format, pipe.String())
		}
	}
	var tjson bytes.Buffer
	logger, _ = newLogger(&console{w: &tjson, terminal: true}, "info", "json")
	logger.Info("step done", "step", 2)
	if !strings.HasPrefix(tjson.String(), `{"time":`) {
		t.Errorf("json at a terminal: %q, want structured lines", tjson.String())
	}
}
