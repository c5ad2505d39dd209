package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestProgressBarOnATerminal runs a rollout whose stderr is an 80-column
// pseudo-terminal and checks the live display: a bar redrawn in place,
// never wider than the terminal, with the step, the mean reward so far,
// errors, rollouts done of total, the rate and the time left, labelled.
func TestProgressBarOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a rollout against a sim server")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	var screen lockedBuffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&screen, ptmx)
		close(copied)
	}()
	cfg := simllm.DefaultConfig()
	cfg.TTFT = 100 * time.Millisecond
	dir := t.TempDir()
	s := startSimServers(t, dir, cfg, 2)
	var stdout bytes.Buffer
	code := runMain(context.Background(), []string{"mgrpo", "rollout", "--tasks", s.tasks, "--out", filepath.Join(dir, "out"),
		"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
		"--batch-size", "2", "--group-size", "4", "--concurrency", "2"}, &stdout, tty, nil, nil)
	tty.Close()
	<-copied
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, screen.String())
	}
	out := screen.String()
	for _, want := range []string{"step 1 · reward", " err", "/8", "rollouts/s", "\r"} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, out)
		}
	}
	if !regexp.MustCompile(`\d+s left`).MatchString(out) {
		t.Errorf("the bar shows no time left:\n%q", out)
	}
	// Each redraw of the bar, and each log line, fits the 80 columns: a
	// wider line would wrap and leave a line behind at every redraw.
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	for _, line := range regexp.MustCompile("[\r\n]").Split(out, -1) {
		if n := len([]rune(ansi.ReplaceAllString(line, ""))); n > 80 && strings.Contains(line, "rollouts/s") {
			t.Errorf("a bar line of %d columns on an 80-column terminal: %q", n, line)
		}
	}
	if !strings.Contains(stdout.String(), "   1        8") {
		t.Errorf("stdout lacks the step row:\n%s", stdout.String())
	}
}

// TestStepRowsAppearAsStepsEnd checks that each step's row is printed when
// the step ends, before the next one starts, not only at the end of the run.
func TestStepRowsAppearAsStepsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the farm against the sim world")
	}
	var both lockedBuffer
	code := runMain(context.Background(), []string{"mgrpo", "rollout", "--sim", "--out", filepath.Join(t.TempDir(), "out"),
		"--steps", "2", "--batch-size", "2", "--group-size", "2"}, &both, &both, nil, nil)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, both.String())
	}
	out := both.String()
	row, next := strings.Index(out, "\n   1        4"), strings.Index(out, `msg="step start" step=2`)
	if row < 0 || next < 0 || row > next {
		t.Errorf("step 1's row (at %d) does not come before step 2 starts (at %d):\n%s", row, next, out)
	}
}
