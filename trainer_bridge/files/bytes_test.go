package files

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// simLikeStep is a step shaped like the sim's default run: 32 queries,
// K = 8, d̄ = 5, 1.5 executor trajectories per rollout on average (the
// sim run measured had 1.4), executor trajectories of a few thousand tokens of which a
// tenth are generated.
var simLikeStep = trainertest.BatchSpec{Run: "bytes", Step: 1, PolicyVersion: 0, Queries: 32, K: 8, DBar: 5, MeanD: 1.5,
	MinTokens: 1500, MaxTokens: 6000, Generated: 0.1, Seed: 42}

// stepDirBytes returns the bytes of the files under dir.
func stepDirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// measure writes both roles' batches as today's step files (planner.jsonl,
// executor.jsonl) and in the hand-off format, and returns both sizes.
func measure(t testing.TB, plan, exec trainerbridge.Batch) (jsonl, handoff int64) {
	t.Helper()
	out := t.TempDir()
	sink := rollout.DirSink{Dir: filepath.Join(out, "jsonl")}
	if err := sink.WriteStep(context.Background(), plan.Step, rollout.StepFiles{Planner: plan.Samples, Executor: exec.Samples}); err != nil {
		t.Fatal(err)
	}
	step := rollout.StepDir(sink.Dir, plan.Step)
	for _, f := range []string{rollout.PlannerFile, rollout.ExecutorFile} {
		fi, err := os.Stat(filepath.Join(step, f))
		if err != nil {
			t.Fatal(err)
		}
		jsonl += fi.Size()
	}
	dir := filepath.Join(out, "handoff")
	for _, b := range []trainerbridge.Batch{plan, exec} {
		if _, err := New(dir, trainerbridge.Options{}).Train(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	return jsonl, stepDirBytes(t, dir)
}

// TestBytesPerStep checks the format's goal: a step takes at most a third
// of the bytes of today's JSONL step files. With MGRPO_STEP_DIR naming a
// step directory of a real run (mgrpo rollout --sim … writes them), that
// step is measured as well.
func TestBytesPerStep(t *testing.T) {
	plan, exec := trainertest.MustBatches(t, simLikeStep)
	jsonl, handoff := measure(t, plan, exec)
	ratio := float64(handoff) / float64(jsonl)
	t.Logf("sim-like step (%d planner, %d executor samples): JSONL %d bytes, hand-off %d bytes, ratio %.3f", len(plan.Samples), len(exec.Samples), jsonl, handoff, ratio)
	if ratio > 1.0/3 {
		t.Errorf("hand-off format takes %.3f of the JSONL's bytes, goal ≤ 1/3", ratio)
	}
	dir := os.Getenv("MGRPO_STEP_DIR")
	if dir == "" {
		return
	}
	var batches [2]trainerbridge.Batch
	for i, f := range []string{rollout.PlannerFile, rollout.ExecutorFile} {
		samples, err := rollout.ReadSamplesJSONL(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) == 0 {
			t.Fatalf("%s holds no samples", f)
		}
		s := samples[0]
		batches[i] = trainerbridge.Batch{Run: s.Run, Role: s.Role, Step: s.Step, PolicyVersion: s.PolicyVersion, Samples: samples}
	}
	jsonl, handoff = measure(t, batches[0], batches[1])
	ratio = float64(handoff) / float64(jsonl)
	t.Logf("%s (%d planner, %d executor samples): JSONL %d bytes, hand-off %d bytes, ratio %.3f", dir, len(batches[0].Samples), len(batches[1].Samples), jsonl, handoff, ratio)
	if ratio > 1.0/3 {
		t.Errorf("hand-off format takes %.3f of the JSONL's bytes, goal ≤ 1/3", ratio)
	}
}

// BenchmarkBytesPerStep reports the hand-off format's bytes per step
// against today's JSONL for the sim-like step, and its encoding speed.
func BenchmarkBytesPerStep(b *testing.B) {
	plan, exec := trainertest.MustBatches(b, simLikeStep)
	jsonl, handoff := measure(b, plan, exec)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, batch := range []trainerbridge.Batch{plan, exec} {
			if _, err := Encode(batch, io.Discard, io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(jsonl), "jsonl_bytes/step")
	b.ReportMetric(float64(handoff), "handoff_bytes/step")
	b.ReportMetric(float64(handoff)/float64(jsonl), "ratio")
}
