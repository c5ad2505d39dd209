package farm

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/llm"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// The server-bound setting's knobs (go test -bench AsyncTrainingAuto
// -async.auto-kv 60000 …).
var (
	autoTrainDelay = flag.Duration("async.auto-train-delay", 0, "BenchmarkAsyncTrainingAuto: the sim trainer's step time (0: the server's work a step R, in seconds of all its slots busy, measured first by a run at S = 0 without training, so that T = R)")
	autoSteps      = flag.Int("async.auto-steps", 6, "BenchmarkAsyncTrainingAuto: steps per run")
	autoBatch      = flag.Int("async.auto-batch", 8, "BenchmarkAsyncTrainingAuto: queries a step (B; K is 4), the work on offer")
	autoKV         = flag.Int("async.auto-kv", 80000, "BenchmarkAsyncTrainingAuto: the sim server's KV capacity in tokens (past it, it preempts); the default holds 16 sequences of 5,000 tokens")
	autoRecompute  = flag.Duration("async.auto-recompute", 100*time.Microsecond, "BenchmarkAsyncTrainingAuto: the sim's recompute time a token of a preempted sequence (its prompt and generated tokens), a prefill's rate")
	autoOvercommit = flag.Int("async.auto-overcommit", 32, "BenchmarkAsyncTrainingAuto: the slots of a second sim server with the same KV capacity, more than it holds (vLLM's max_num_seqs set high), where auto and the too-high concurrency also run at S = 2 streamed (0: not run)")
	autoRight      = flag.Int("async.auto-right", 32, "BenchmarkAsyncTrainingAuto: the fixed --concurrency of the fixed variants; the too-high one is 4× this")
)

// BenchmarkAsyncTrainingAuto is BenchmarkAsyncTraining's setting where the
// server bounds the work (its rollout work per step R equal to the trainer's
// step T: -async.auto-train-delay, or by default T measured as R by a first
// run at S = 0 without training), on a sim server with a KV-cache model
// sized to hold its slots' sequences with modest headroom (-async.auto-kv
// tokens; past it the newest sequence is preempted and, readmitted,
// recomputes its prompt and generated tokens at -async.auto-recompute a
// token), with B·K = 4·-async.auto-batch rollouts a step on offer,
// comparing --concurrency auto with fixed concurrencies side by side in one
// run: S = 0 and 1 fixed steps and S = 2 streamed with auto (each role's
// request limit adapting to the server's /metrics under a cap of 4 ×
// -async.auto-right rollouts in flight), S = 0 and 1 with the fixed
// -async.auto-right, and S = 2 streamed with a fixed concurrency 4× too
// high; then auto and 4× too high at S = 2 streamed again on a second
// server with the same KV cache and more slots than it holds
// (-async.auto-overcommit: an engine whose max_num_seqs is set high, as
// vLLM's default often is for long sequences). Per variant: trained samples/s over the whole run and in steady
// state (between the first and the last step trained, without the
// pipeline's fill, which a long run amortizes), the server's slots busy
// over the whole run and in steady state (asyncRun.steadyUtilization),
// its preemptions over the run and the mean adaptive limit per role;
// ratios S1/S0 (auto and fixed) and auto over too-high for throughput and
// preemptions. Medians over the b.N iterations.
func BenchmarkAsyncTrainingAuto(b *testing.B) {
	cfg := simllm.DefaultConfig()
	cfg.Seed = 3
	cfg.TTFT = 20 * time.Millisecond
	cfg.PerToken = 2 * time.Millisecond
	cfg.Slots = *asyncSlots
	cfg.KVCapacity = *autoKV
	cfg.RecomputePerToken = *autoRecompute
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
		// llm is the server's URL, llmURL's unless set.
		llm string
	}
	base := asyncOpts{slots: *asyncSlots, steps: *autoSteps, batch: *autoBatch, trainDelay: *autoTrainDelay}
	with := func(concurrency int, auto bool) asyncOpts {
		o := base
		o.concurrency = concurrency
		if auto {
			o.auto = &llm.AutoConfig{Cap: int64(concurrency), Interval: 250 * time.Millisecond}
		}
		return o
	}
	if base.trainDelay <= 0 {
		// R: the server's work a step, in seconds of all its slots busy,
		// from a run at S = 0 with auto and no training (its slot-seconds
		// over the slots, a step). A step's latency is longer: its tail
		// leaves slots idle.
		cal := with(high, true)
		cal.steps = min(cal.steps, 3)
		r := runAsyncWith(b, llmURL, webURL, tasks, asyncVariant{s: 0}, cal)
		base.trainDelay = time.Duration(r.utilization * float64(r.wall) / float64(cal.steps)).Round(100 * time.Millisecond)
		b.Logf("trainer step T = R = %v: %d steps at S = 0 without training took %v with the slots %.0f%% busy", base.trainDelay, cal.steps,
			r.wall.Round(time.Millisecond), 100*r.utilization)
	}
	variants := []variant{
		{name: "S0-auto", v: asyncVariant{s: 0}, o: with(high, true)},
		{name: "S1-auto", v: asyncVariant{s: 1}, o: with(high, true)},
		{name: "S2-stream-auto", v: asyncVariant{s: 2, stream: true}, o: with(high, true)},
		{name: "S0-fixed", v: asyncVariant{s: 0}, o: with(*autoRight, false)},
		{name: "S1-fixed", v: asyncVariant{s: 1}, o: with(*autoRight, false)},
		{name: fmt.Sprintf("S2-stream-fixed%d", high), v: asyncVariant{s: 2, stream: true}, o: with(high, false)},
	}
	if *autoOvercommit > 0 {
		oc := cfg
		oc.Slots = *autoOvercommit
		ocURL, _ := startSimServers(b, oc)
		for _, auto := range []bool{true, false} {
			v := variant{name: fmt.Sprintf("S2-stream-fixed%d-overcommit", high), v: asyncVariant{s: 2, stream: true}, o: with(high, auto), llm: ocURL}
			if auto {
				v.name = "S2-stream-auto-overcommit"
			}
			v.o.slots = oc.Slots
			variants = append(variants, v)
		}
	}
	figures := map[string][]float64{}
	add := func(name string, v float64) { figures[name] = append(figures[name], v) }
	for b.Loop() {
		runs := map[string]asyncRun{}
		for _, v := range variants {
			url := llmURL
			if v.llm != "" {
				url = v.llm
			}
			r := runAsyncWith(b, url, webURL, tasks, v.v, v.o)
			runs[v.name] = r
			add("samples/s-"+v.name, r.rate)
			add("steady-samples/s-"+v.name, r.steadyRate())
			add("slots-busy-"+v.name, r.utilization)
			add("steady-slots-busy-"+v.name, r.steadyUtilization(v.v.s, v.o.slots))
			add("preemptions-"+v.name, r.preemptions)
			if v.o.auto != nil {
				add("limit-"+v.name, r.meanLimit)
			}
		}
		tooHigh := runs[variants[5].name]
		auto := runs["S2-stream-auto"]
		add("S1/S0-auto", runs["S1-auto"].rate/runs["S0-auto"].rate)
		add("S1/S0-fixed", runs["S1-fixed"].rate/runs["S0-fixed"].rate)
		add("steady-S1/S0-auto", runs["S1-auto"].steadyRate()/runs["S0-auto"].steadyRate())
		add("steady-S1/S0-fixed", runs["S1-fixed"].steadyRate()/runs["S0-fixed"].steadyRate())
		add("auto/too-high-samples/s", auto.rate/tooHigh.rate)
		add("auto/too-high-steady-samples/s", auto.steadyRate()/tooHigh.steadyRate())
		add("auto/too-high-preemptions", auto.preemptions/max(tooHigh.preemptions, 1))
		if *autoOvercommit > 0 {
			auto, tooHigh := runs["S2-stream-auto-overcommit"], runs[variants[7].name]
			add("auto/too-high-overcommit-samples/s", auto.rate/tooHigh.rate)
			add("auto/too-high-overcommit-steady-samples/s", auto.steadyRate()/tooHigh.steadyRate())
			add("auto/too-high-overcommit-preemptions", auto.preemptions/max(tooHigh.preemptions, 1))
		}
	}
	b.ReportMetric(base.trainDelay.Seconds(), "train-delay-s")
	for name, xs := range figures {
		b.ReportMetric(median(xs), name)
	}
}
