package gateway

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/benchproc"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/sim/web"
)

// benchLatencyEnv, set for the benchmark's child, is the sim's fixed
// latency per model call (a time.Duration); unset, the sim answers at once.
const benchLatencyEnv = "MGRPO_GATEWAY_BENCH_LATENCY"

// benchCallLatency is the sim's latency per model call in
// BenchmarkGatewayLatency: the 2 s calls of the farm's own latency
// benchmark, so that the two fractions of the ideal compare.
const benchCallLatency = 2 * time.Second

// BenchmarkGatewayLatency runs 1,000 rollouts at once through one gateway,
// and, side by side, through the built-in agents in process. A child
// process serves the sim's inference server (2 s per call whatever its
// length, an unbounded number of slots), the sim web and the push agent,
// which plays each rollout's planner and its executors in parallel, each
// executor naming the delegate call that started it. Each side reports the
// mean rollout latency as a fraction of the ideal (the goal for the
// gateway: ≥ 0.9). A rollout's ideal latency is its critical path at
// exactly 2 s a call: each planner turn, then the slowest executor that
// turn started (tool calls take no time in the ideal), as in the farm's
// BenchmarkFarmSimLatency. It also reports this process's CPU per model
// call (the farm, and the agents or the gateway), the child's (the sim, and
// on the gateway side the agent), the mean latency of the engine calls (the
// client's Turn.Latency), peak RSS and the machine's load average, since
// other work on a shared machine moves every latency here.
func BenchmarkGatewayLatency(b *testing.B) {
	const concurrency = 1000
	line, child := benchproc.Start(b, "TestBenchChild", []string{benchChildEnv + "=1", benchLatencyEnv + "=" + benchCallLatency.String()}, "child ")
	f := strings.Fields(line)
	world, err := web.Generate(web.Config{Seed: benchWorldSeed, Questions: 128})
	if err != nil {
		b.Fatal(err)
	}
	tasks := make([]farm.Task, len(world.Questions))
	for i, q := range world.Questions {
		tasks[i] = farm.Task{ID: q.ID, Question: q.Question, Answer: q.Answer}
	}
	scoring := farm.Scoring{Mode: rollout.ModeMGRPO, Weights: rollout.DefaultRewardWeights(), ExpertFallback: rollout.DefaultExpertFallback}
	sides := benchSides(b, f[1], f[2], map[string]string{"gateway": f[3]}, 4*concurrency)
	for _, side := range sides {
		if os.Getenv(benchSideEnv) != "" && os.Getenv(benchSideEnv) != side.name {
			continue
		}
		b.Run(side.name, func(b *testing.B) {
			var actual, ideal, maxActual, maxIdeal, callLatency time.Duration
			var calls, n, failed, unlinked int
			load0 := benchproc.LoadAverage()
			cpu0, _ := benchproc.Usage(b)
			child0 := benchproc.ProcessCPU(b, child.Process.Pid)
			start := time.Now()
			for round := 0; b.Loop(); round++ {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for i := range concurrency {
					wg.Go(func() {
						t := tasks[i%len(tasks)]
						task := rollout.RolloutTask{Run: "bench", Step: round + 1, QueryID: t.ID, K: i, Seed: int64(round*concurrency + i)}
						tr := &timed{inner: side.runner}
						res := farm.Execute(context.Background(), tr, scoring, task, t)
						crit, c, missing := criticalPath(res.Tree)
						mu.Lock()
						defer mu.Unlock()
						actual += tr.took
						ideal += crit
						maxActual, maxIdeal = max(maxActual, tr.took), max(maxIdeal, crit)
						calls += c
						unlinked += missing
						for _, tr := range append([]*agents.Trajectory{res.Tree.Planner}, res.Tree.Executors...) {
							for _, turn := range tr.Turns {
								callLatency += turn.Latency
							}
						}
						n++
						if res.Error != "" {
							failed++
						}
					})
				}
				wg.Wait()
			}
			elapsed := time.Since(start)
			cpu1, rss := benchproc.Usage(b)
			child1 := benchproc.ProcessCPU(b, child.Process.Pid)
			load1 := benchproc.LoadAverage()
			if n == 0 || calls == 0 {
				b.Fatal("no rollout made a model call")
			}
			meanIdeal, meanActual := ideal.Seconds()/float64(n), actual.Seconds()/float64(n)
			b.ReportMetric(meanIdeal/meanActual, "latency-ideal-fraction")
			b.ReportMetric(meanIdeal, "ideal-latency-s")
			b.ReportMetric(meanActual, "latency-s")
			b.ReportMetric(maxIdeal.Seconds(), "max-ideal-latency-s")
			b.ReportMetric(maxActual.Seconds(), "max-latency-s")
			b.ReportMetric(float64(calls)/float64(n), "calls/rollout")
			b.ReportMetric(float64(calls)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(calls), "farm-cpu-µs/call")
			b.ReportMetric(float64((child1-child0).Microseconds())/float64(calls), "child-cpu-µs/call")
			b.ReportMetric(callLatency.Seconds()/float64(calls), "engine-call-latency-s")
			b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
			b.ReportMetric(max(load0, load1), "loadavg-1m")
			b.ReportMetric(float64(failed), "failed-rollouts")
			b.ReportMetric(float64(unlinked), "unlinked-executors")
			b.ReportMetric(float64(runtime.NumCPU()), "cores")
		})
	}
}

// benchSideEnv, when set to a side's name (in-process, gateway), runs
// BenchmarkGatewayLatency's that side only (the peak RSS is the process's,
// so a side run alone has its own).
const benchSideEnv = "MGRPO_GATEWAY_BENCH_SIDE"

// criticalPath is a rollout's ideal latency at benchCallLatency a call
// (each planner turn, then the slowest executor it started), its number of
// model calls, and the executors no planner call links to (their time is
// left out of the ideal, so they would flatter it).
func criticalPath(tree *agents.Rollout) (ideal time.Duration, calls, unlinked int) {
	linked := make([]bool, len(tree.Executors))
	for i := range tree.Planner.Turns {
		ideal += benchCallLatency
		slowest := 0
		if i < len(tree.Planner.Steps) {
			for _, c := range tree.Planner.Steps[i].Calls {
				if c.Executor >= 0 && c.Executor < len(tree.Executors) {
					linked[c.Executor] = true
					slowest = max(slowest, len(tree.Executors[c.Executor].Turns))
				}
			}
		}
		ideal += time.Duration(slowest) * benchCallLatency
	}
	calls = len(tree.Planner.Turns)
	for i, e := range tree.Executors {
		calls += len(e.Turns)
		if !linked[i] {
			unlinked++
		}
	}
	return ideal, calls, unlinked
}

// timed is a runner that records how long its one rollout took (the
// gateway's Run: the offer, the agent's calls, the tree).
type timed struct {
	inner farm.Runner
	took  time.Duration
}

func (r *timed) Run(ctx context.Context, task rollout.RolloutTask, t farm.Task) *agents.Rollout {
	start := time.Now()
	defer func() { r.took = time.Since(start) }()
	return r.inner.Run(ctx, task, t)
}

// benchLatency is the child's sim latency per call (benchLatencyEnv).
func benchLatency() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(benchLatencyEnv))
	return d
}
