package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// TestRebuildStore: a run of 3 steps whose store.db is then emptied is
// refused on --resume (exit 2, pointing at --rebuild-store); with
// --rebuild-store --steps 5 it writes steps 4 and 5 only, steps 1-3 keep
// their bytes, and the files of steps 4 and 5 equal those of an
// uninterrupted 5-step run (the sim is deterministic; auto d̄ makes step
// 4 depend on step 3's d_k, which the rebuilt store holds).
func TestRebuildStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it against the sim")
	}
	dir := t.TempDir()
	sims := startSimServers(t, dir, simllm.DefaultConfig(), 8)
	ref := filepath.Join(dir, "reference")
	startMgrpo(t, runArgs(sims, ref, 5, "--dbar", "auto")...).wait(t, 3*time.Minute)

	out := filepath.Join(dir, "out")
	startMgrpo(t, runArgs(sims, out, 3, "--dbar", "auto")...).wait(t, 3*time.Minute)
	before := stepBytes(t, out, 3)
	if err := os.Truncate(filepath.Join(out, "store.db"), 0); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(filepath.Join(out, "store.db"+suffix))
	}

	p := startMgrpo(t, runArgs(sims, out, 5, "--dbar", "auto", "--resume")...)
	if code := p.exitCode(t, time.Minute); code != 2 || !strings.Contains(p.stderr.String(), "--rebuild-store") {
		t.Fatalf("--resume on an emptied store: exit %d; want 2 pointing at --rebuild-store:\n%s", code, p.stderr.String())
	}
	p = startMgrpo(t, runArgs(sims, out, 5, "--dbar", "auto", "--resume", "--rebuild-store")...)
	p.wait(t, 3*time.Minute)
	log := p.stderr.String()
	for step := 1; step <= 3; step++ {
		if strings.Contains(log, `msg="step start" step=`+string(rune('0'+step))+" ") {
			t.Errorf("step %d was rerun:\n%s", step, log)
		}
	}
	if !strings.Contains(log, `msg="step start" step=4 `) {
		t.Errorf("step 4 did not start:\n%s", log)
	}
	// The store's statistics of a rebuilt step are its files'.
	st, err := sqlite.Open(context.Background(), filepath.Join(out, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored, err := st.StepStats(context.Background(), "crash", 2)
	if err != nil {
		t.Fatal(err)
	}
	files, err := rollout.ReadStatsJSONL(filepath.Join(rollout.StepDir(out, 2), rollout.StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, files) {
		t.Errorf("the rebuilt store's statistics of step 2 are not its stats.jsonl's:\n%+v\n%+v", stored, files)
	}
	if !strings.Contains(log, "rebuilt the store's view") {
		t.Errorf("no rebuild logged:\n%s", log)
	}
	after := stepBytes(t, out, 3)
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Errorf("%s changed on the rebuilt resume", name)
		}
	}
	for step := 4; step <= 5; step++ {
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			want, err := os.ReadFile(filepath.Join(rollout.StepDir(ref, step), name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(rollout.StepDir(out, step), name))
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("step %d %s differs from the uninterrupted run's (%d vs %d bytes)", step, name, len(got), len(want))
			}
		}
	}
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 5 {
		t.Errorf("summary.jsonl holds %d lines, want 5 (one per step, none twice)", len(sums))
	}
}

// stepBytes returns the contents of every file of steps 1..n of out.
func stepBytes(t *testing.T, out string, n int) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for step := 1; step <= n; step++ {
		entries, err := os.ReadDir(rollout.StepDir(out, step))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			path := filepath.Join(rollout.StepDir(out, step), e.Name())
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files[path] = b
		}
	}
	return files
}
