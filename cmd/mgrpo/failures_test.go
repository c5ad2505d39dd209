package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
)

// TestUselessRunStops plays a new user's mistake against the sim: a wrong
// --planner-model with --sim. It used to make every rollout fail (the sim
// answers 404) and stop after a useless step; it is now caught before any
// rollout (issue 50): exit 2 naming both flags, no step written.
func TestUselessRunStops(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, "--log-level", "error", "rollout", "--sim", "--planner-model", "no-such-model", "--steps", "2",
		"--batch-size", "2", "--group-size", "2", "--rollout-retries", "1", "--out", out)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
	}
	for _, w := range []string{"--sim and --planner-model", `"no-such-model"`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "step-000001")); err == nil {
		t.Error("the useless step was written")
	}
}

// TestInterruptedSimRunResumesToTheSameFiles is the reproduction of issue
// 27: a `--sim` coordinator, its sim inside it, interrupted in the middle
// of step 2 and resumed. The rollouts the shutdown cut are infra failures
// with retries left: the resumed run runs them again instead of keeping
// them as zeros, so every step file equals an uninterrupted run's (d̄ auto
// included, which carries a step's d_k into the next).
func TestInterruptedSimRunResumesToTheSameFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary against the sim")
	}
	args := func(out string) []string {
		return []string{"rollout", "--sim", "--out", out, "--steps", "3", "--batch-size", "4", "--group-size", "4",
			"--concurrency", "8"}
	}
	clean := filepath.Join(t.TempDir(), "out") // the run is named after its directory
	startMgrpo(t, args(clean)...).wait(t, 3*time.Minute)

	out := filepath.Join(t.TempDir(), "out")
	p := startMgrpo(t, args(out)...)
	waitFor(t, p.stderr, `msg="step start" step=2`)
	time.Sleep(300 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.exitCode(t, time.Minute); code == 0 {
		t.Log("the run finished before the interruption took effect")
	}
	startMgrpo(t, append(args(out), "--resume")...).wait(t, 3*time.Minute)
	for s := 1; s <= 3; s++ {
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			a, errA := os.ReadFile(filepath.Join(rollout.StepDir(clean, s), name))
			b, errB := os.ReadFile(filepath.Join(rollout.StepDir(out, s), name))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("step %d %s differs from the uninterrupted run's (%v, %v)", s, name, errA, errB)
			}
		}
	}
}
