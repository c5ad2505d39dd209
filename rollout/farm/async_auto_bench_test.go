package farm

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents/llm"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// The server-bound setting's knobs (go test -bench AsyncTrainingAuto
// -async.auto-kv 60000 …).
var (
	autoTrainDelay = flag.Duration("async.auto-train-delay", 3*time.Second, "BenchmarkAsyncTrainingAuto: the sim trainer's step time, at most a step's rollout work on the server")
	autoSteps      = flag.Int("async.auto-steps", 4, "BenchmarkAsyncTrainingAuto: steps per run")
	autoKV         = flag.Int("async.auto-kv", 48000, "BenchmarkAsyncTrainingAuto: the sim server's KV capacity in tokens (past it, it preempts)")
	autoRight      = flag.Int("async.auto-right", 32, "BenchmarkAsyncTrainingAuto: the fixed --concurrency of the fixed variants; the too-high one is 4× this")
)

// BenchmarkAsyncTrainingAuto is BenchmarkAsyncTraining's setting where the
// server bounds the work (its rollout work per step at least the trainer's
// step, -async.auto-train-delay), on a sim server with a KV-cache model
// (-async.auto-kv tokens; past it the newest sequence is preempted and
// recomputed), comparing --concurrency auto with fixed concurrencies side by
// side in one run: S = 0 and 1 fixed steps and S = 2 streamed with auto
// (each role's request limit adapting to the server's /metrics under a cap
// of 4 × -async.auto-right rollouts in flight), S = 0 and 1 with the fixed
// -async.auto-right, and S = 2 streamed with a fixed concurrency 4× too
// high. Per variant: trained samples/s, the server's slots busy, its
// preemptions over the run and the mean adaptive limit per role; ratios
// S1/S0 (auto and fixed) and auto over too-high for throughput and
// preemptions. Medians over the b.N iterations.
func BenchmarkAsyncTrainingAuto(b *testing.B) {
	cfg := simllm.DefaultConfig()
	cfg.Seed = 3
	cfg.TTFT = 20 * time.Millisecond
	cfg.PerToken = 2 * time.Millisecond
	cfg.Slots = *asyncSlots
	cfg.KVCapacity = *autoKV
	cfg.Skills = policy.DefaultSkills()
	cfg.Skills.Retry, cfg.Skills.PickBest, cfg.Skills.SnippetShortcut = 0.9, 0.2, 0.2
	cfg.Skills.PlannerTurns, cfg.Skills.ExecutorTurns = 24, 16
	llmURL, webURL := startSimServers(b, cfg)
	tasks := simTasks(b, 16)
	high := 4 * *autoRight
	type variant struct {
		name string
		v    asyncVariant
		o    asyncOpts
	}
	base := asyncOpts{slots: *asyncSlots, steps: *autoSteps, trainDelay: *autoTrainDelay}
	with := func(concurrency int, auto bool) asyncOpts {
		o := base
		o.concurrency = concurrency
		if auto {
			o.auto = &llm.AutoConfig{Cap: int64(concurrency), Interval: 250 * time.Millisecond}
		}
		return o
	}
	variants := []variant{
		{"S0-auto", asyncVariant{s: 0}, with(high, true)},
		{"S1-auto", asyncVariant{s: 1}, with(high, true)},
		{"S2-stream-auto", asyncVariant{s: 2, stream: true}, with(high, true)},
		{"S0-fixed", asyncVariant{s: 0}, with(*autoRight, false)},
		{"S1-fixed", asyncVariant{s: 1}, with(*autoRight, false)},
		{fmt.Sprintf("S2-stream-fixed%d", high), asyncVariant{s: 2, stream: true}, with(high, false)},
	}
	figures := map[string][]float64{}
	add := func(name string, v float64) { figures[name] = append(figures[name], v) }
	for b.Loop() {
		runs := map[string]asyncRun{}
		for _, v := range variants {
			r := runAsyncWith(b, llmURL, webURL, tasks, v.v, v.o)
			runs[v.name] = r
			add("samples/s-"+v.name, r.rate)
			add("slots-busy-"+v.name, r.utilization)
			add("preemptions-"+v.name, r.preemptions)
			if v.o.auto != nil {
				add("limit-"+v.name, r.meanLimit)
			}
		}
		tooHigh := runs[variants[5].name]
		add("S1/S0-auto", runs["S1-auto"].rate/runs["S0-auto"].rate)
		add("S1/S0-fixed", runs["S1-fixed"].rate/runs["S0-fixed"].rate)
		add("auto/too-high-samples/s", runs["S2-stream-auto"].rate/tooHigh.rate)
		add("auto/too-high-preemptions", runs["S2-stream-auto"].preemptions/max(tooHigh.preemptions, 1))
	}
	for name, xs := range figures {
		b.ReportMetric(median(xs), name)
	}
}
