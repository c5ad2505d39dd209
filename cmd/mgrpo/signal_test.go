package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// lockedBuffer is a bytes.Buffer safe for the logger and the test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecondSignalStopsAtOnce runs a rollout against a slow model server
// (every answer takes 5 s), interrupts it once, then again, and checks that
// the first interrupt starts the graceful stop, the second exits at once
// with status 130, and no step directory was written. "At once" is checked
// by order, not by a clock a loaded machine would fail: the exit comes
// while the run is still in its 10 s grace period.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a rollout against a slow sim server")
	}
	cfg := simllm.DefaultConfig()
	cfg.TTFT = 5 * time.Second
	dir := t.TempDir()
	s := startSimServers(t, dir, cfg, 2)
	conf := filepath.Join(dir, "run.yaml")
	os.WriteFile(conf, []byte("grace: 10s\n"), 0o644)
	out := filepath.Join(dir, "out")

	signals := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	done := make(chan int, 1)
	var stderr lockedBuffer
	go func() {
		done <- runMain(context.Background(), []string{"mgrpo", "rollout", "--config", conf, "--tasks", s.tasks, "--out", out,
			"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
			"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost, "--batch-size", "2", "--group-size", "2"},
			&bytes.Buffer{}, &stderr, signals, func(code int) { exited <- code })
	}()
	waitFor(t, &stderr, "step start")
	// Interrupt once a rollout's call is in flight (each takes 5 s): an
	// interrupt before any rollout starts ends the run at once, with
	// nothing to give a grace period to.
	for deadline := time.Now().Add(30 * time.Second); s.agentCalls.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no rollout call reached the sim:\n%s", stderr.String())
		}
	}
	signals <- syscall.SIGINT
	waitFor(t, &stderr, "send the signal again to stop at once")
	signals <- syscall.SIGINT
	select {
	case code := <-exited:
		if code != exitInterrupted {
			t.Errorf("exit %d after the second signal, want %d", code, exitInterrupted)
		}
	case code := <-done:
		t.Fatalf("the run ended (status %d) before the second signal's exit: it waited out the grace period:\n%s", code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit after the second signal:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopping at once") {
		t.Errorf("the immediate stop was not logged:\n%s", stderr.String())
	}
	<-done // the fake exit returns; the run then ends after its grace period
	if _, err := os.Stat(filepath.Join(out, "step-000001")); err == nil {
		t.Error("an interrupted step was written")
	}
}

// waitFor polls buf until it contains s. The deadline only catches a hang:
// a slow sim's preflight probes (each answer of TestSecondSignalStopsAtOnce's
// takes 5 s) come first, on a machine that may be busy.
func waitFor(t *testing.T, buf *lockedBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(buf.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", s, buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInterruptDuringTrainingFinishesIt interrupts `mgrpo train --sim`
// while the sim trainer's optimizer step of step 1 is in flight (each
// takes 3 s): the call finishes within the grace period, so step 1 is
// trained and recorded, and no later step starts.
func TestInterruptDuringTrainingFinishesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in the sim world")
	}
	out := filepath.Join(t.TempDir(), "out")
	signals := make(chan os.Signal, 2)
	done := make(chan int, 1)
	var stderr lockedBuffer
	go func() {
		done <- runMain(context.Background(), append([]string{"mgrpo"}, simTrainArgs(out, 3, "--sim-trainer-step-time", "3s")...),
			&bytes.Buffer{}, &stderr, signals, func(int) {})
	}()
	waitFor(t, &stderr, `msg="step done" step=1`)
	signals <- syscall.SIGINT
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit within the grace period:\n%s", stderr.String())
	}
	if code != exitInterrupted {
		t.Errorf("exit %d after a clean stop on an interrupt, want %d", code, exitInterrupted)
	}
	log := stderr.String()
	stop, trained := strings.Index(log, "stopping: in-flight work"), strings.Index(log, `msg="step trained" step=1`)
	if stop < 0 || trained < stop {
		t.Errorf("step 1 was not trained after the interrupt (exit %d):\n%s", code, log)
	}
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Training["planner"].Version != 1 || sums[0].Training["executor"].Version != 1 {
		t.Errorf("summaries %+v; want step 1 alone, trained to version 1 for both roles", sums)
	}
	if strings.Contains(log, `msg="step start" step=2`) {
		t.Error("step 2 started after the interrupt")
	}
}

// TestInterruptStopsAServer: Ctrl-C is how `mgrpo sim` ends: exit 0, and
// its log line speaks of servers, not of resuming a run.
func TestInterruptStopsAServer(t *testing.T) {
	signals := make(chan os.Signal, 2)
	done := make(chan int, 1)
	var stderr lockedBuffer
	pr, pw := io.Pipe()
	go func() {
		done <- runMain(context.Background(), []string{"mgrpo", "sim", "--llm", "127.0.0.1:0", "--web", "127.0.0.1:0", "--trainer", "127.0.0.1:0",
			"--checkpoint-dir", t.TempDir()}, pw, &stderr, signals, func(int) {})
		pw.Close()
	}()
	if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil {
		t.Fatalf("sim printed no address: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	signals <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after Ctrl-C, want 0:\n%s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("sim still serving a minute after Ctrl-C:\n%s", stderr.String())
	}
	if log := stderr.String(); strings.Contains(log, "--resume") || !strings.Contains(log, "closing the servers") {
		t.Errorf("the stop message does not fit a server:\n%s", log)
	}
}
