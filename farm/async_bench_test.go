package farm

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
	"github.com/mgrpo/mgrpo/store/sqlite"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

// The asynchronous training benchmark's knobs (go test -bench
// AsyncTraining -async.train-delay 2s …).
var (
	asyncTrainDelay = flag.Duration("async.train-delay", 4*time.Second, "BenchmarkAsyncTraining: the sim trainer's step time, as a GPU step would take")
	asyncSteps      = flag.Int("async.steps", 6, "BenchmarkAsyncTraining: steps per run")
	asyncSlots      = flag.Int("async.slots", 16, "BenchmarkAsyncTraining: the sim server's generation slots")
	asyncRollouts   = flag.Int("async.concurrency", 32, "BenchmarkAsyncTraining: the farm's rollouts in flight (--concurrency); above the slots, the server queues, as a saturated deployment does")
)

// BenchmarkAsyncTraining measures, side by side in one run, what
// asynchronous training gains for max staleness S = 0, 1, 2 with fixed
// steps and S = 1, 2 with streamed groups (Training.StreamGroups) on the sim
// world, whose rollout lengths are heavy-tailed of themselves (the number
// of delegations, searches and visits varies with the question and the
// policy's draws; the lengths are reported), with a decode-time latency
// and a trainer whose steps take -async.train-delay, as a GPU step would.
// Per S it reports trained samples per second of wall time, the sim
// server's slot utilization (vllm:num_requests_running sampled every 20 ms,
// over its slots), the staleness of every trained sample, and the mean
// reward of the steps trained within a fixed wall time (the shortest of the
// runs). Each b.N iteration runs the three side by side; the
// reported figures are medians over the iterations (-benchtime 3x: three).
func BenchmarkAsyncTraining(b *testing.B) {
	cfg := simllm.DefaultConfig()
	cfg.Seed = 3
	cfg.TTFT = 20 * time.Millisecond
	cfg.PerToken = 2 * time.Millisecond
	cfg.Slots = *asyncSlots
	// A policy that retries misses and reads carefully more often: long
	// research chains for some rollouts, a guess for others (a heavier
	// tail than the default skills' max/mean of about 2).
	cfg.Skills = policy.DefaultSkills()
	cfg.Skills.Retry, cfg.Skills.PickBest, cfg.Skills.SnippetShortcut = 0.9, 0.2, 0.2
	cfg.Skills.PlannerTurns, cfg.Skills.ExecutorTurns = 24, 16
	llmURL, webURL := startSimServers(b, cfg)
	tasks := simTasks(b, 16)
	// The fixed steps at S = 0, 1, 2 and the streamed ones
	// (Training.StreamGroups) at S = 1, 2.
	variants := []asyncVariant{{s: 0}, {s: 1}, {s: 2}, {s: 1, stream: true}, {s: 2, stream: true}}
	rate, busy := map[asyncVariant][]float64{}, map[asyncVariant][]float64{}
	ratios := map[string][]float64{}
	hist := map[asyncVariant]map[int64]int{}
	var lengths []time.Duration
	var rewards = map[asyncVariant][]float64{}
	for b.Loop() {
		runs := map[asyncVariant]asyncRun{}
		for _, v := range variants {
			r := runAsync(b, llmURL, webURL, tasks, v)
			runs[v] = r
			rate[v] = append(rate[v], r.rate)
			busy[v] = append(busy[v], r.utilization)
			if hist[v] == nil {
				hist[v] = map[int64]int{}
			}
			for k, n := range r.staleness {
				hist[v][k] += n
			}
			lengths = append(lengths, r.lengths...)
		}
		horizon := runs[variants[0]].wall
		for _, r := range runs {
			horizon = min(horizon, r.wall)
		}
		for _, v := range variants {
			rewards[v] = append(rewards[v], runs[v].rewardBy(horizon))
		}
		base := runs[asyncVariant{s: 0}].rate
		ratios["S1/S0"] = append(ratios["S1/S0"], runs[asyncVariant{s: 1}].rate/base)
		ratios["S2/S0"] = append(ratios["S2/S0"], runs[asyncVariant{s: 2}].rate/base)
		ratios["S1stream/S0"] = append(ratios["S1stream/S0"], runs[asyncVariant{s: 1, stream: true}].rate/base)
		ratios["S2stream/S0"] = append(ratios["S2stream/S0"], runs[asyncVariant{s: 2, stream: true}].rate/base)
		ratios["S1stream/S1"] = append(ratios["S1stream/S1"], runs[asyncVariant{s: 1, stream: true}].rate/runs[asyncVariant{s: 1}].rate)
	}
	for _, v := range variants {
		b.ReportMetric(median(rate[v]), "samples/s-"+v.String())
		b.ReportMetric(median(busy[v]), "slots-busy-"+v.String())
		b.ReportMetric(median(rewards[v]), "reward@T-"+v.String())
		b.Logf("%s: staleness of the trained samples (versions: samples) %v", v, hist[v])
	}
	for _, name := range []string{"S1/S0", "S2/S0", "S1stream/S0", "S2stream/S0", "S1stream/S1"} {
		b.ReportMetric(median(ratios[name]), name)
	}
	slices.Sort(lengths)
	if n := len(lengths); n > 0 {
		var total time.Duration
		for _, l := range lengths {
			total += l
		}
		mean := total / time.Duration(n)
		b.Logf("rollout lengths over %d rollouts: mean %v, p50 %v, p90 %v, p99 %v, max %v (max/mean %.1f)", n, mean.Round(time.Millisecond),
			lengths[n/2].Round(time.Millisecond), lengths[n*9/10].Round(time.Millisecond), lengths[n*99/100].Round(time.Millisecond),
			lengths[n-1].Round(time.Millisecond), float64(lengths[n-1])/float64(mean))
	}
}

// asyncVariant is one configuration of the benchmark: max staleness s,
// fixed or streamed steps.
type asyncVariant struct {
	s      int
	stream bool
}

func (v asyncVariant) String() string {
	if v.stream {
		return fmt.Sprintf("S%d-stream", v.s)
	}
	return fmt.Sprintf("S%d", v.s)
}

// asyncRun is one run's figures.
type asyncRun struct {
	wall        time.Duration
	rate        float64
	utilization float64
	// busy is the server's running requests over the run.
	busy      []busySample
	staleness map[int64]int
	lengths   []time.Duration
	// trained holds each step's end of training (since the start) and its
	// mean reward and rollouts.
	trained []stepReward
	// preemptions is the server's vllm:num_preemptions_total over the run;
	// meanLimit the mean adaptive request limit of a role (auto only).
	preemptions float64
	meanLimit   float64
}

type stepReward struct {
	at       time.Duration
	reward   float64
	rollouts int
	samples  int
}

// steadyRate returns the trained samples per second between the first and
// the last step's end of training: the run's rate without the pipeline's
// fill (the first step's rollouts and training, and at S > 0 the steps
// started with it), which a run of many steps amortizes. It is 0 for fewer
// than two steps.
func (r asyncRun) steadyRate() float64 {
	steps := slices.SortedFunc(slices.Values(r.trained), func(a, b stepReward) int { return cmp.Compare(a.at, b.at) })
	if len(steps) < 2 {
		return 0
	}
	samples := 0
	for _, s := range steps[1:] {
		samples += s.samples
	}
	return float64(samples) / (steps[len(steps)-1].at - steps[0].at).Seconds()
}

// rewardBy returns the mean reward of the rollouts of the steps trained
// within horizon.
func (r asyncRun) rewardBy(horizon time.Duration) float64 {
	var sum float64
	n := 0
	for _, s := range r.trained {
		if s.at <= horizon {
			sum += s.reward * float64(s.rollouts)
			n += s.rollouts
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// runAsync runs one training run at max staleness s and measures it.
func runAsync(b *testing.B, llmURL, webURL string, tasks []Task, v asyncVariant) asyncRun {
	b.Helper()
	return runAsyncWith(b, llmURL, webURL, tasks, v, asyncOpts{concurrency: *asyncRollouts, slots: *asyncSlots, trainDelay: *asyncTrainDelay, steps: *asyncSteps, batch: 4})
}

// asyncOpts are the knobs of one measured run.
type asyncOpts struct {
	concurrency, slots, steps int
	// batch is the queries a step (B; K is 4).
	batch      int
	trainDelay time.Duration
	// auto, when set, makes each role's request limit adaptive
	// (--concurrency auto); limits then receives the limit samples.
	auto *llm.AutoConfig
}

// runAsyncWith is runAsync with its knobs.
func runAsyncWith(b *testing.B, llmURL, webURL string, tasks []Task, v asyncVariant, o asyncOpts) asyncRun {
	b.Helper()
	tl := newTimeline()
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "store.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	hist := &stalenessHist{counts: map[int64]int{}}
	pools := map[string]*llm.Pool{}
	runner := &lengthRunner{inner: newSimRunner(b, llmURL, webURL, simRunnerConfig{mode: rollout.ModeMGRPO, auto: o.auto,
		pools: func(role string, p *llm.Pool) { pools[role] = p }})}
	var out asyncRun
	var mu sync.Mutex
	start := time.Now()
	fc := Config{Run: "async", Seed: 5, Steps: o.steps, BatchSize: o.batch, GroupSize: 4, Mode: rollout.ModeMGRPO,
		DBar: rollout.DBarSpec{Fixed: 2}, Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: o.concurrency,
		Runner: runner, Sink: rollout.DirSink{Dir: dir}, Store: st,
		OnStep: func(sum rollout.StepSummary) {
			mu.Lock()
			defer mu.Unlock()
			out.trained = append(out.trained, stepReward{at: time.Since(start), reward: sum.MeanMainReward, rollouts: sum.Rollouts,
				samples: sum.PlannerSamples + sum.ExecutorSamples})
		},
		Training: &Training{MaxStaleness: v.s, StreamGroups: v.stream, Trainers: map[rollout.Role]trainerbridge.Trainer{
			rollout.RolePlanner:  &histTrainer{inner: &slowTrainer{tl: tl, delay: o.trainDelay}, hist: hist},
			rollout.RoleExecutor: &histTrainer{inner: &slowTrainer{tl: newTimeline(), delay: o.trainDelay}, hist: hist}}}}
	var limitSum float64
	limitN := 0
	if o.auto != nil {
		// The limits over the run, sampled as the progress line shows them.
		fc.ConcurrencyLimits = func() map[string]int64 {
			out := map[string]int64{}
			for role, p := range pools {
				out[role], _ = p.ConcurrencyLimit()
			}
			return out
		}
		fc.OnProgress = func(p Progress) {
			for _, n := range p.Limits {
				limitSum += float64(n)
				limitN++
			}
		}
	}
	f, err := New(fc, tasks)
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	util := make(chan float64, 1)
	go func() {
		u, samples := sampleRunning(ctx, llmURL, o.slots, start)
		out.busy = samples
		util <- u
	}()
	preBefore, _ := serverGauge(context.Background(), llmURL, "vllm:num_preemptions_total")
	sums, err := f.Run(context.Background())
	stop()
	if err != nil {
		b.Fatal(err)
	}
	out.wall = time.Since(start)
	out.utilization = <-util
	samples := 0
	for _, sum := range sums {
		samples += sum.PlannerSamples + sum.ExecutorSamples
	}
	out.rate = float64(samples) / out.wall.Seconds()
	out.staleness = hist.counts
	out.lengths = runner.lengths
	preAfter, _ := serverGauge(context.Background(), llmURL, "vllm:num_preemptions_total")
	out.preemptions = preAfter - preBefore
	if limitN > 0 {
		out.meanLimit = limitSum / float64(limitN)
	}
	return out
}

// sampleRunning polls the sim server's /metrics every 20 ms until ctx ends
// and returns the mean of vllm:num_requests_running over slots, and every
// sample (the running requests, since start).
func sampleRunning(ctx context.Context, llmURL string, slots int, start time.Time) (float64, []busySample) {
	var samples []busySample
	var sum float64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if len(samples) == 0 {
				return 0, nil
			}
			return sum / float64(len(samples)) / float64(slots), samples
		case <-tick.C:
		}
		if v, ok := runningRequests(ctx, llmURL); ok {
			sum += v
			samples = append(samples, busySample{at: time.Since(start), running: v})
		}
	}
}

// busySample is one reading of the server's running requests.
type busySample struct {
	at      time.Duration
	running float64
}

// steadyUtilization is the slots' utilization between the first step
// trained and step N−S−1 trained (by end of training), the last one after
// which the farm still admits a step: without the pipeline's fill and
// without its drain (the last steps' tails and trainings with nothing left
// to admit), which a run of many steps amortizes. It is 0 when the run has
// too few steps for that window.
func (r asyncRun) steadyUtilization(s, slots int) float64 {
	steps := slices.SortedFunc(slices.Values(r.trained), func(a, b stepReward) int { return cmp.Compare(a.at, b.at) })
	last := len(steps) - s - 2
	if last < 1 {
		return 0
	}
	from, to := steps[0].at, steps[last].at
	var sum float64
	n := 0
	for _, b := range r.busy {
		if b.at >= from && b.at <= to {
			sum += b.running
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n) / float64(slots)
}

// runningRequests reads vllm:num_requests_running from the server's
// Prometheus text.
func runningRequests(ctx context.Context, llmURL string) (float64, bool) {
	return serverGauge(ctx, llmURL, "vllm:num_requests_running")
}

// serverGauge reads one sample of name from the server's Prometheus text.
func serverGauge(ctx context.Context, llmURL, name string) (float64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, llmURL+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return v, err == nil
	}
	return 0, false
}

// stalenessHist counts trained samples by their staleness.
type stalenessHist struct {
	mu     sync.Mutex
	counts map[int64]int
}

// histTrainer counts, for every sample it trains, how many versions its
// policy version is behind the trainer's.
type histTrainer struct {
	inner trainerbridge.Trainer
	hist  *stalenessHist
}

func (h *histTrainer) Start(ctx context.Context) error { return h.inner.Start(ctx) }
func (h *histTrainer) Close() error                    { return h.inner.Close() }
func (h *histTrainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	h.hist.mu.Lock()
	for _, s := range b.Samples {
		h.hist.counts[b.PolicyVersion-s.PolicyVersion]++
	}
	h.hist.mu.Unlock()
	return h.inner.Train(ctx, b)
}

// lengthRunner keeps every rollout's duration.
type lengthRunner struct {
	inner   Runner
	mu      sync.Mutex
	lengths []time.Duration
}

func (r *lengthRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	start := time.Now()
	out := r.inner.Run(ctx, task, t)
	r.mu.Lock()
	r.lengths = append(r.lengths, time.Since(start))
	r.mu.Unlock()
	return out
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
