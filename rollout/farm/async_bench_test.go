package farm

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/store/sqlite"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// BenchmarkAsyncTraining measures, side by side in one run, what
// asynchronous training gains: trained samples per second of wall time
// for max staleness S = 0, 1, 2, on the sim with a decode-time latency
// (rollout lengths vary with the answers) and a trainer whose steps take
// as long as a step's rollouts (trainDelay), as a GPU step would. With
// S = 0 rollouts and training alternate; with S ≥ 1 they overlap, so the
// ideal gain is ×2 when both take the same time. rollout-busy is the
// fraction of wall time during which some rollout ran.
func BenchmarkAsyncTraining(b *testing.B) {
	cfg := simllm.DefaultConfig()
	cfg.Seed = 3
	cfg.TTFT = 20 * time.Millisecond
	cfg.PerToken = 2 * time.Millisecond
	llmURL, webURL := startSimServers(b, cfg)
	tasks := simTasks(b, 8)
	const steps, trainDelay = 6, 4 * time.Second
	rate := map[int]float64{}
	for b.Loop() {
		for _, s := range []int{0, 1, 2} {
			tl := newTimeline()
			dir := b.TempDir()
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "store.db"))
			if err != nil {
				b.Fatal(err)
			}
			fc := Config{Run: "async", Seed: 5, Steps: steps, BatchSize: 4, GroupSize: 4, Mode: rollout.ModeMGRPO,
				DBar: rollout.DBarSpec{Fixed: 2}, Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 16,
				Runner: &timedRunner{inner: newSimRunner(b, llmURL, webURL, simRunnerConfig{mode: rollout.ModeMGRPO}), tl: tl},
				Sink:   rollout.DirSink{Dir: dir}, Store: st,
				Training: &Training{MaxStaleness: s, Trainers: map[rollout.Role]trainerbridge.Trainer{
					rollout.RolePlanner: &slowTrainer{tl: tl, delay: trainDelay}, rollout.RoleExecutor: &slowTrainer{tl: newTimeline(), delay: trainDelay}}}}
			f, err := New(fc, tasks)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			sums, err := f.Run(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			wall := time.Since(start)
			st.Close()
			samples := 0
			var rolloutTime float64
			for _, sum := range sums {
				samples += sum.PlannerSamples + sum.ExecutorSamples
				rolloutTime += sum.RolloutSeconds
			}
			rate[s] = float64(samples) / wall.Seconds()
			b.ReportMetric(rate[s], fmt.Sprintf("samples/s-S%d", s))
			b.ReportMetric(rolloutTime/wall.Seconds(), fmt.Sprintf("rollout-busy-S%d", s))
		}
		b.ReportMetric(rate[1]/rate[0], "S1/S0")
		b.ReportMetric(rate[2]/rate[0], "S2/S0")
	}
}
