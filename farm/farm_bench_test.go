package farm

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/benchproc"
	"github.com/mgrpo/mgrpo/internal/heappeak"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
	"github.com/mgrpo/mgrpo/sim/web"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/redis"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// The benchmarks run the sim servers in a child process (this test binary,
// running TestSimServerChild), so that the farm's CPU time and peak RSS are
// measured apart from the simulated world's.
const simChildEnv = "MGRPO_ROLLOUT_SIM_CHILD"

// simChildProfileEnv names a file for the sim child's CPU profile, to see
// where the simulated world spends its share of a benchmark.
const simChildProfileEnv = "MGRPO_ROLLOUT_SIM_CPUPROFILE"

// TestSimServerChild is not a test: run by a benchmark with simChildEnv set
// to the sim's latency model (see simLatency.String), it serves the sim
// world, prints "SIM <llm> <web>" and serves until its standard input
// closes.
func TestSimServerChild(t *testing.T) {
	spec := os.Getenv(simChildEnv)
	if spec == "" {
		t.Skip("only runs as the benchmarks' sim server process")
	}
	lat, err := parseSimLatency(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := simllm.DefaultConfig()
	cfg.Seed, cfg.TTFT, cfg.PerToken, cfg.Slots = 5, lat.ttft, lat.perToken, 1<<20
	cfg.Skills = benchSkills()
	llmURL, webURL := startSimWorld(t, cfg, web.Config{Seed: simWorldSeed, BackgroundSentences: benchBackgroundSentences})
	if path := os.Getenv(simChildProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	fmt.Printf("SIM %s %s\n", llmURL, webURL)
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}

// benchBackgroundSentences lengthens the sim's entity pages so that,
// with benchSkills, the mean history a model call sends is about 8 KB, as
// the farm's performance goal states it (the default sim world's pages are
// short: its histories average about 5 KB).
const benchBackgroundSentences = 70

// benchSkills is the sim policy the benchmarks play: the default model
// made more thorough (more queries per search, more pages per visit, fewer
// answers taken from snippets), so that the mean history a model call
// sends is about 8 KB, as the farm's performance goal states it.
func benchSkills() policy.Skills {
	s := policy.DefaultSkills()
	s.MaxQueries, s.VisitTwo, s.SnippetShortcut = 3, 0.5, 0.2
	return s
}

// simChild is a running sim server process.
type simChild struct {
	cmd            *exec.Cmd
	llmURL, webURL string
}

// simLatency is the sim's latency model: a call that generates n tokens
// answers after ttft + (n-1)·perToken, as a real server's decode time
// grows with the output.
type simLatency struct {
	ttft, perToken time.Duration
}

func (l simLatency) String() string { return l.ttft.String() + "+" + l.perToken.String() + "/token" }

func parseSimLatency(s string) (simLatency, error) {
	first, rest, ok := strings.Cut(strings.TrimSuffix(s, "/token"), "+")
	if !ok {
		return simLatency{}, fmt.Errorf("latency model %q: want TTFT+PERTOKEN/token", s)
	}
	ttft, err := time.ParseDuration(first)
	if err != nil {
		return simLatency{}, err
	}
	per, err := time.ParseDuration(rest)
	return simLatency{ttft, per}, err
}

// of returns the modeled latency of a call that generated n tokens.
func (l simLatency) of(n int) time.Duration {
	return l.ttft + time.Duration(max(n-1, 0))*l.perToken
}

// startSimChild starts the sim servers in a child process.
func startSimChild(b *testing.B, lat simLatency) *simChild {
	b.Helper()
	line, cmd := benchproc.Start(b, "TestSimServerChild", []string{simChildEnv + "=" + lat.String()}, "SIM ")
	f := strings.Fields(line)
	if len(f) != 3 {
		b.Fatalf("sim child announced %q, want SIM <llm> <web>", line)
	}
	return &simChild{cmd: cmd, llmURL: f[1], webURL: f[2]}
}

// cpuTime returns the CPU time (user + system) the child has used so far.
func (c *simChild) cpuTime(b *testing.B) time.Duration {
	return procStat(b, c.cmd.Process.Pid).cpu
}

// procCounters are a process's CPU time and minor page faults so far.
type procCounters struct {
	cpu    time.Duration
	faults int64
}

// procStat reads a process's counters from /proc (CPU time in clock ticks
// of 10 ms).
func procStat(b *testing.B, pid int) procCounters {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the parenthesised command name: state is field 3,
	// minflt field 10, utime and stime fields 14 and 15.
	rest := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	minflt, _ := strconv.ParseInt(rest[7], 10, 64)
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	return procCounters{cpu: time.Duration(ut+st) * 10 * time.Millisecond, faults: minflt}
}

// selfUsage returns this process's CPU time and peak RSS in bytes.
func selfUsage(b *testing.B) (time.Duration, int64) {
	b.Helper()
	return benchproc.Usage(b)
}

// meanPromptBytes decodes the prompts of the kept trees' turns with the sim
// tokenizer and returns their mean size in bytes: the history each call
// sends.
func meanPromptBytes(b *testing.B, trees []*agents.Rollout) float64 {
	tok := simllm.NewTokenizer()
	var total, n int
	for _, tree := range trees {
		for _, tr := range append([]*agents.Trajectory{tree.Planner}, tree.Executors...) {
			for _, turn := range tr.Turns {
				s, err := tok.Decode(wideIDs(turn.PromptIDs))
				if err != nil {
					b.Fatal(err)
				}
				total += len(s)
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(total) / float64(n)
}

// dirBytes returns the total size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchFarm runs one step of batch×group rollouts with concurrency slots
// against the sim child and returns the summary.
func benchFarm(b *testing.B, runner Runner, tasks []Task, batch, group, concurrency int, keepFiles bool) rollout.StepSummary {
	b.Helper()
	return benchFarmIn(b, nil, "bench", runner, tasks, batch, group, concurrency, keepFiles)
}

// benchFarmIn is benchFarm in st, when not nil, as run: a running farm
// keeps its store open from step to step.
func benchFarmIn(b *testing.B, st store.Store, run string, runner Runner, tasks []Task, batch, group, concurrency int, keepFiles bool) rollout.StepSummary {
	b.Helper()
	cfg := Config{Run: run, Seed: 1, Steps: 1, BatchSize: batch, GroupSize: group, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Auto: true},
		Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: concurrency, Runner: runner, Sink: rollout.DirSink{Dir: b.TempDir()}}
	if st != nil {
		cfg.Store = st
	} else if st := benchStore(b); st != nil {
		defer st.Close()
		cfg.Store = st
	}
	f, err := New(cfg, tasks)
	if err != nil {
		b.Fatal(err)
	}
	sums, err := f.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	dir := cfg.Sink.(rollout.DirSink).Dir
	b.ReportMetric(float64(dirBytes(b, dir))/float64(sums[0].LLMCalls)/1024, "file-KB/call")
	if !keepFiles {
		os.RemoveAll(dir)
	}
	return sums[0]
}

// benchHeapEnv names a file that, when set, receives a heap profile taken
// at the highest heap the latency benchmark reaches (sampled every 500 ms),
// to see what holds the peak RSS.
const benchHeapEnv = "MGRPO_BENCH_HEAP_PEAK"

// heapAtPeak starts the sampling of benchHeapEnv; the returned func stops
// it and writes the profile.
func heapAtPeak(b *testing.B) func() {
	path := os.Getenv(benchHeapEnv)
	if path == "" {
		return func() {}
	}
	stop := heappeak.Watch(path, 500*time.Millisecond)
	return func() {
		peak, err := stop()
		if err != nil {
			b.Error(err)
		}
		b.Logf("heap profile at the peak (%d MiB in use) in %s", peak>>20, path)
	}
}

// benchStoreEnv set to sqlite makes the farm benchmarks keep results in a
// SQLite store (as mgrpo rollout does by default) instead of in memory, to
// measure what the store costs the farm, side by side with it unset; set
// to redis, in the Redis of MGRPO_TEST_REDIS (each run under a prefix of
// its own). Either is behind the write-behind buffer mgrpo puts it.
const benchStoreEnv = "MGRPO_BENCH_STORE"

// benchStore opens the store benchStoreEnv asks for (nil: none).
func benchStore(b *testing.B) store.Store {
	b.Helper()
	var (
		st  store.Store
		err error
	)
	switch v := os.Getenv(benchStoreEnv); v {
	case "":
		return nil
	case "sqlite":
		st, err = sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "store.db"))
	case "redis":
		raw := os.Getenv("MGRPO_TEST_REDIS")
		if raw == "" {
			b.Fatalf("%s=redis needs MGRPO_TEST_REDIS", benchStoreEnv)
		}
		st, err = redis.Open(context.Background(), fmt.Sprintf("%s?prefix=mgrpo-bench-%d:", raw, time.Now().UnixNano()))
	default:
		b.Fatalf("%s=%q: want sqlite or redis", benchStoreEnv, v)
	}
	if err != nil {
		b.Fatal(err)
	}
	return store.NewWriteBehind(st, store.DefaultWriteBehind)
}

// benchH2CEnv, set to anything, makes the farm benchmarks' model clients
// speak unencrypted HTTP/2 instead of HTTP/1.1, to measure what the
// transport costs per call.
const benchH2CEnv = "MGRPO_BENCH_H2C"

// http1InFlightCap caps BenchmarkFarmSimLatency's model calls in flight per
// role over HTTP/1.1: two roles' connections plus the tool calls' stay
// under the 20,000 descriptors a process may open here.
const http1InFlightCap = 8000

// BenchmarkFarmSimZeroLatency measures, against the zero-latency sim, the
// farm's rollouts per second and its CPU time per model call (this process,
// the sim excluded), and the sim's CPU time per call for comparison. Each
// iteration is one step of 16 queries × 8 rollouts with 64 in flight.
//
// The figures are a running farm's: one step runs before the measurement
// starts, as a warm-up, and its own cost per call is reported apart
// (first-step-farm-cpu-µs/call). It pays once per run for what later steps
// reuse: connections, the client's caches, the prompt templates, and the
// heap growing to its working size.
func BenchmarkFarmSimZeroLatency(b *testing.B) {
	child := startSimChild(b, simLatency{})
	const batch, group, concurrency = 16, 8, 64
	tasks := simTasks(b, batch)
	rr := &timingRunner{inner: newSimRunner(b, child.llmURL, child.webURL, simRunnerConfig{mode: rollout.ModeMGRPO, visitBudget: 0, h2c: os.Getenv(benchH2CEnv) != ""}), keep: true}
	var calls, rollouts, failed int
	var promptTokens int64
	warm0, _ := selfUsage(b)
	// One store for every step, as a run keeps it (each step a run of its
	// own in it).
	st := benchStore(b)
	if st != nil {
		defer st.Close()
	}
	runs := 0
	warm := benchFarmIn(b, st, "bench-0", rr, tasks, batch, group, concurrency, false)
	cpu0, _ := selfUsage(b)
	sim0 := child.cpuTime(b)
	start := time.Now()
	for b.Loop() {
		runs++
		sum := benchFarmIn(b, st, fmt.Sprintf("bench-%d", runs), rr, tasks, batch, group, concurrency, false)
		calls += sum.LLMCalls
		rollouts += sum.Rollouts
		failed += sum.FailedRollouts
		promptTokens += sum.PromptTokens
	}
	elapsed := time.Since(start)
	cpu1, rss := selfUsage(b)
	sim1 := child.cpuTime(b)
	farmCPU, simCPU := cpu1-cpu0, sim1-sim0
	b.ReportMetric(float64(rollouts)/elapsed.Seconds(), "rollouts/s")
	b.ReportMetric(float64(farmCPU.Microseconds())/float64(calls), "farm-cpu-µs/call")
	b.ReportMetric(float64(simCPU.Microseconds())/float64(calls), "sim-cpu-µs/call")
	b.ReportMetric(float64(simCPU)/float64(simCPU+farmCPU), "sim-cpu-share")
	// Reported here: b.Loop deletes metrics reported before it starts.
	b.ReportMetric(float64((cpu0-warm0).Microseconds())/float64(warm.LLMCalls), "first-step-farm-cpu-µs/call")
	b.ReportMetric(float64(calls)/float64(rollouts), "calls/rollout")
	b.ReportMetric(meanPromptBytes(b, rr.trees), "history-bytes/call")
	b.ReportMetric(float64(promptTokens)/float64(calls), "prompt-tokens/call")
	b.ReportMetric(float64(failed), "failed-rollouts")
	b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
}

// BenchmarkFarmSimLatency measures, against the sim with a mean model-call
// latency of 2 s, the farm's throughput as a fraction of the Little's-law
// ideal at 1,000 and 10,000 rollouts in flight, with the process's peak
// RSS. One step of one rollout per slot (the 10,000 case holds a whole
// step of trees and samples in memory).
//
// Two latency models: "fixed" answers every call after exactly 2 s;
// "decode" after 0.5 s plus 15 ms per generated token after the first
// (about 2 s for the sim's mean of ~100 tokens; 1 to 5 s in practice), as a
// real server's latency grows with the output. Under "fixed" every rollout
// of a step moves in lock step: all 10,000 calls come back in the same
// instant, and each wave waits for the CPU to process 10,000 answers and
// requests, which on two cores shared with the sim costs more than a
// second per wave. Under "decode" the rollouts drift apart, as they do
// against real servers, and the CPU load spreads over time.
//
// Two fractions are reported: latency-ideal-fraction is the mean ideal
// rollout latency (the modeled latencies along the critical path, see
// criticalLatency) over the mean measured one, i.e. the throughput C/W of
// a saturated farm relative to C/W*; step-ideal-fraction is the step's
// measured throughput over C/W*, which also pays for the step's tail
// (slots idle while the last rollouts finish). The rollout phase (up to
// the step's last rollout, before its files are written) is also reported
// as each process's CPU time and minor page faults per call, and
// cores-at-ideal multiplies their CPU per call by the ideal call rate: the
// cores a farm holding this many rollouts in flight at the ideal latency
// would keep busy, to compare with the machine's. Run each size in its own
// process so that peak RSS is that size's. The model clients use the
// client's default transport, HTTP/1.1 with one connection per call in
// flight, capped at http1InFlightCap calls per role so that both roles'
// connections (and the sim's ends of them) fit the 20,000 descriptors this
// machine allows a process, which a process here cannot raise; at the
// peak of 10,000 rollouts (more calls than that, with parallel
// delegations) a call may wait for a slot. With MGRPO_BENCH_H2C set they
// speak unencrypted HTTP/2 instead (250 streams a connection, no cap below
// 4 × the concurrency), for comparison. Tool calls to the sim web are
// HTTP/1.1 either way.
func BenchmarkFarmSimLatency(b *testing.B) {
	models := []struct {
		name string
		lat  simLatency
	}{
		{"fixed", simLatency{ttft: 2 * time.Second}},
		{"decode", simLatency{ttft: 500 * time.Millisecond, perToken: 15 * time.Millisecond}},
	}
	for _, m := range models {
		for _, concurrency := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("latency=%s/concurrency=%d", m.name, concurrency), func(b *testing.B) {
				h2c := os.Getenv(benchH2CEnv) != ""
				inFlight := int64(4 * concurrency)
				if !h2c {
					inFlight = min(inFlight, http1InFlightCap)
				}
				child := startSimChild(b, m.lat)
				const group, perSlot = 8, 1
				batch := concurrency * perSlot / group
				tasks := simTasks(b, batch)
				rr := &timingRunner{inner: newSimRunner(b, child.llmURL, child.webURL,
					simRunnerConfig{mode: rollout.ModeMGRPO, visitBudget: 4000, maxInFlight: inFlight, h2c: h2c}), lat: m.lat, total: batch * group}
				var sum rollout.StepSummary
				cpu0, _ := selfUsage(b)
				self0, child0 := procStat(b, os.Getpid()), procStat(b, child.cmd.Process.Pid)
				// The first step's rollout phase, up to its last rollout.
				var self1, child1 procCounters
				var phaseCalls int
				rr.onLast = func() {
					self1, child1 = procStat(b, os.Getpid()), procStat(b, child.cmd.Process.Pid)
					phaseCalls = rr.calls
				}
				stopHeap := heapAtPeak(b)
				start := time.Now()
				for b.Loop() {
					sum = benchFarm(b, rr, tasks, batch, group, concurrency, true)
				}
				stopHeap()
				elapsed := time.Since(start)
				cpu1, rss := selfUsage(b)
				sim1 := child.cpuTime(b)
				meanIdeal := rr.ideal.Seconds() / float64(rr.n)
				meanActual := rr.actual.Seconds() / float64(rr.n)
				idealRate := float64(concurrency) / meanIdeal
				b.ReportMetric(float64(rr.n)/elapsed.Seconds(), "rollouts/s")
				b.ReportMetric(idealRate, "ideal-rollouts/s")
				b.ReportMetric(meanIdeal/meanActual, "latency-ideal-fraction")
				b.ReportMetric(sum.RolloutsPerSecond/idealRate, "step-ideal-fraction")
				b.ReportMetric(meanIdeal, "ideal-latency-s")
				b.ReportMetric(meanActual, "latency-s")
				b.ReportMetric(rr.maxIdeal.Seconds(), "max-ideal-latency-s")
				b.ReportMetric(rr.maxActual.Seconds(), "max-latency-s")
				b.ReportMetric(rr.callLatency.Seconds()/float64(rr.calls), "mean-call-latency-s")
				b.ReportMetric(rr.measured.Seconds()/float64(rr.calls), "measured-call-latency-s")
				b.ReportMetric(float64(rr.calls)/elapsed.Seconds(), "calls/s")
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(rr.calls), "farm-cpu-µs/call")
				b.ReportMetric(float64((sim1-child0.cpu).Microseconds())/float64(rr.calls), "sim-cpu-µs/call")
				b.ReportMetric(float64(procStat(b, os.Getpid()).faults-self0.faults)/float64(rr.calls), "farm-faults/call")
				// What the rollout phase costs and what the ideal rate
				// would need: CPU per call of both processes times the
				// ideal call rate is the number of cores a farm holding
				// this many rollouts in flight at the ideal latency would
				// keep busy (this machine has runtime.NumCPU()).
				farmPhase := float64((self1.cpu - self0.cpu).Microseconds()) / float64(phaseCalls)
				simPhase := float64((child1.cpu - child0.cpu).Microseconds()) / float64(phaseCalls)
				idealCalls := idealRate * float64(rr.calls) / float64(rr.n)
				b.ReportMetric(farmPhase, "rollout-phase-farm-cpu-µs/call")
				b.ReportMetric(simPhase, "rollout-phase-sim-cpu-µs/call")
				b.ReportMetric(float64(self1.faults-self0.faults)/float64(phaseCalls), "rollout-phase-farm-faults/call")
				b.ReportMetric(float64(child1.faults-child0.faults)/float64(phaseCalls), "rollout-phase-sim-faults/call")
				b.ReportMetric(idealCalls, "ideal-calls/s")
				b.ReportMetric((farmPhase+simPhase)*idealCalls/1e6, "cores-at-ideal")
				b.ReportMetric(float64(runtime.NumCPU()), "cores")
				b.ReportMetric(float64(sum.FailedRollouts), "failed-rollouts")
				b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
			})
		}
	}
}
