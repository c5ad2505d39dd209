package farm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/web"
)

// simPair is a sim web with two inference servers of the same seed: a
// clean one and one that injects faults. The web's URLs appear in
// prompts, so runs to compare must share it; the inference servers'
// URLs do not appear in any step file.
type simPair struct {
	webURL          string
	cleanURL        string
	faultyURL       string
	faulty          *simllm.Server
	tasks           []Task
	webHandler      http.Handler
	webServerClosed func()
}

func newSimPair(t *testing.T, faults simllm.Faults) simPair {
	t.Helper()
	if testing.Short() {
		t.Skip("plays whole rollouts against the sim world")
	}
	world, err := web.Generate(web.Config{Seed: simWorldSeed})
	if err != nil {
		t.Fatal(err)
	}
	webSrv := httptest.NewServer(world.Handler())
	t.Cleanup(webSrv.Close)
	start := func(f simllm.Faults) (string, *simllm.Server) {
		cfg := simllm.DefaultConfig()
		cfg.Seed, cfg.Faults = 5, f
		srv, err := simllm.NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(func() { hs.Close(); srv.Close() })
		return hs.URL, srv
	}
	p := simPair{webURL: webSrv.URL, tasks: simTasks(t, 8), webHandler: world.Handler()}
	p.cleanURL, _ = start(simllm.Faults{})
	p.faultyURL, p.faulty = start(faults)
	return p
}

// attemptsRunner keeps every tree its inner runner returns, each run of a
// rollout (its retries) in order.
type attemptsRunner struct {
	inner Runner
	mu    sync.Mutex
	trees map[string][]*agents.Rollout
}

func (r *attemptsRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	tree := r.inner.Run(ctx, task, t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trees == nil {
		r.trees = map[string][]*agents.Rollout{}
	}
	r.trees[task.ID()] = append(r.trees[task.ID()], tree)
	return tree
}

// seedRecorder wraps a model client and records which trajectory sent each
// sampling seed, so the sim's log of sabotaged requests maps to rollouts.
type seedRecorder struct {
	mu   sync.Mutex
	keys map[int64]string
}

func (s *seedRecorder) wrap(m agents.Model) agents.Model { return recordingModel{m, s} }

type recordingModel struct {
	inner agents.Model
	rec   *seedRecorder
}

func (m recordingModel) Chat(ctx context.Context, req llm.Request) (*llm.Turn, error) {
	if req.Sampling != nil && req.Sampling.Seed != nil {
		m.rec.mu.Lock()
		if m.rec.keys == nil {
			m.rec.keys = map[int64]string{}
		}
		m.rec.keys[*req.Sampling.Seed] = req.TrajectoryKey
		m.rec.mu.Unlock()
	}
	return m.inner.Chat(ctx, req)
}

// linesByQuery reads a samples file's lines grouped by query id.
func linesByQuery(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		var s struct {
			QueryID string `json:"query_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		out[s.QueryID] = append(out[s.QueryID], sc.Text())
	}
	return out
}

// infraTree reports whether a tree holds an infra failure.
func infraTree(tree *agents.Rollout) bool {
	for _, tr := range append([]*agents.Trajectory{tree.Planner}, tree.Executors...) {
		if tr != nil && tr.FailureKind == failure.KindInfra {
			return true
		}
	}
	return false
}

// TestInfraFaultsTrainNoSabotagedReward runs two steps against an
// inference server that answers 503 to 2.5% of generation requests, with
// clients that do not retry a call, so about a fifth of the rollouts meet
// a fault that ends them, and one rollout retry, so some exhaust it. It
// checks against the sim's log of what it sabotaged that no trained
// sample comes from a sabotaged run: every sabotaged rollout whose group
// was trained was run again, its last run clean; every group holding a
// rollout whose last run was still an infra failure is excluded and
// counted; and every trained group's samples are byte for byte those of a
// run against a clean server with the same seeds.
func TestInfraFaultsTrainNoSabotagedReward(t *testing.T) {
	pair := newSimPair(t, simllm.Faults{Rate503: 0.025})
	const steps, B, K = 2, 4, 4
	run := func(llmURL string, rec *seedRecorder) (string, *attemptsRunner, []rollout.StepSummary) {
		rc := simRunnerConfig{mode: rollout.ModeMGRPO, retry: llm.RetryPolicy{MaxAttempts: 1}}
		if rec != nil {
			rc.wrap = rec.wrap
		}
		runner := &attemptsRunner{inner: newSimRunner(t, llmURL, pair.webURL, rc)}
		dir := t.TempDir()
		cfg := Config{Run: "faults", Seed: 3, Steps: steps, BatchSize: B, GroupSize: K, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Fixed: 2},
			Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 16, Runner: runner, Sink: rollout.DirSink{Dir: dir},
			Failures: FailurePolicy{RolloutRetries: 1, RetryWait: time.Millisecond, OnInfra: InfraExclude}}
		return dir, runner, mustRunFarm(t, cfg, pair.tasks)
	}
	cleanDir, _, _ := run(pair.cleanURL, nil)
	rec := &seedRecorder{}
	dir, runner, sums := run(pair.faultyURL, rec)

	sabotaged := map[string]int{} // rollout id → sabotaged requests
	for _, s := range pair.faulty.Sabotaged() {
		if s.Seed == nil {
			t.Fatalf("sabotaged request %d has no seed", s.N)
		}
		key, ok := rec.keys[*s.Seed]
		if !ok {
			t.Fatalf("sabotaged request %d: seed %d was never sent", s.N, *s.Seed)
		}
		sabotaged[rolloutOfKey(key)]++
	}
	if len(pair.faulty.Sabotaged()) == 0 {
		t.Fatal("the sim sabotaged nothing; the test checks nothing")
	}
	retries, excludedAll := 0, 0
	for s := 1; s <= steps; s++ {
		sum := sums[s-1]
		excluded := map[string]bool{}
		for _, e := range sum.Excluded {
			excluded[e.QueryID] = true
		}
		if sum.ExcludedGroups != len(sum.Excluded) {
			t.Errorf("step %d: excluded_groups %d, %d listed", s, sum.ExcludedGroups, len(sum.Excluded))
		}
		excludedAll += sum.ExcludedGroups
		retries += sum.RolloutRetries
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile} {
			clean := linesByQuery(t, filepath.Join(rollout.StepDir(cleanDir, s), name))
			got := linesByQuery(t, filepath.Join(rollout.StepDir(dir, s), name))
			for q, lines := range got {
				if excluded[q] {
					t.Errorf("step %d %s: excluded query %s has samples", s, name, q)
				}
				if !slices.Equal(lines, clean[q]) {
					t.Errorf("step %d %s: query %s's samples differ from the clean run's", s, name, q)
				}
			}
		}
		plan := planStep("faults", 3, s, B, K, pair.tasks, 0, 0)
		for q, task := range plan.tasks {
			lastInfra := false
			for k := range K {
				id := plan.units[q*K+k].ID()
				runs := runner.trees[id]
				if len(runs) == 0 {
					t.Fatalf("rollout %s never ran", id)
				}
				last := runs[len(runs)-1]
				lastInfra = lastInfra || infraTree(last)
				retries -= len(runs) - 1
				if n := sabotaged[id]; n > 0 && !excluded[task.ID] && len(runs) < 2 {
					t.Errorf("rollout %s was sabotaged %d times, never retried, and its group was trained", id, n)
				}
				if !excluded[task.ID] && infraTree(last) {
					t.Errorf("rollout %s: its last run is an infra failure and its group was trained", id)
				}
				for _, tree := range runs[:len(runs)-1] {
					if !infraTree(tree) {
						t.Errorf("rollout %s was retried after a run without an infra failure", id)
					}
				}
			}
			if lastInfra != excluded[task.ID] {
				t.Errorf("step %d query %s: a rollout still infra %v, excluded %v", s, task.ID, lastInfra, excluded[task.ID])
			}
		}
	}
	if retries != 0 {
		t.Errorf("the summaries' rollout_retries differ from the runs made again by %d", retries)
	}
	t.Logf("%d requests sabotaged in %d rollouts, %d groups excluded", len(pair.faulty.Sabotaged()), len(sabotaged), excludedAll)
}

// rolloutOfKey returns the rollout id of a trajectory key (the rollout's
// id followed by /planner or /executor/I).
func rolloutOfKey(key string) string {
	if i := strings.LastIndex(key, "/"+agents.RolePlanner); i >= 0 && i == len(key)-len("/"+agents.RolePlanner) {
		return key[:i]
	}
	if i := strings.LastIndex(key, "/"+agents.RoleExecutor+"/"); i >= 0 {
		return key[:i]
	}
	return key
}

// failingSearch serves the sim web, except that it answers 503 to the
// search queries whose hash falls in the lower rate of its range: the same
// query always fails, as a provider that is down for it would.
func failingSearch(h http.Handler, rate float64, failed *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/search") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			hf := fnv.New32a()
			hf.Write(body)
			if float64(hf.Sum32()%1000) < rate*1000 {
				failed.Add(1)
				http.Error(w, `{"message":"service unavailable"}`, http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// TestSearchOutagesTaintRollouts runs a step whose search provider answers
// 503 to 60% of the queries. A rollout whose tool calls hit outages on more
// than the allowed fraction of its calls is recorded as an infra failure
// (tool_outage) and run again with the same seed; still tainted, its group
// is excluded. The summary counts the outages.
func TestSearchOutagesTaintRollouts(t *testing.T) {
	pair := newSimPair(t, simllm.Faults{})
	var failed atomic.Int64
	search := httptest.NewServer(failingSearch(pair.webHandler, 0.6, &failed))
	t.Cleanup(search.Close)
	const B, K, fraction = 2, 4, 0.25
	runner := &attemptsRunner{inner: newSimRunner(t, pair.cleanURL, pair.webURL, simRunnerConfig{mode: rollout.ModeMGRPO, searchURL: search.URL})}
	dir := t.TempDir()
	cfg := Config{Run: "outages", Seed: 3, Steps: 1, BatchSize: B, GroupSize: K, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Fixed: 2},
		Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 8, Runner: runner, Sink: rollout.DirSink{Dir: dir},
		Failures: FailurePolicy{RolloutRetries: 1, RetryWait: time.Millisecond, TaintToolOutages: true, MaxToolOutageFraction: fraction, OnInfra: InfraExclude}}
	sum := mustRunFarm(t, cfg, pair.tasks)[0]
	if failed.Load() == 0 {
		t.Fatal("no search failed; the test checks nothing")
	}
	recs := rolloutRecordsByID(t, filepath.Join(rollout.StepDir(dir, 1), rollout.RolloutsFile))
	outages, tainted := 0, 0
	excluded := map[string]bool{}
	for _, e := range sum.Excluded {
		excluded[e.QueryID] = true
	}
	for id, runs := range runner.trees {
		last := runs[len(runs)-1]
		n, calls := toolOutages(last)
		outages += n
		want := n > 0 && float64(n) > fraction*float64(calls)
		rec := recs[id]
		if got := rec.FailureCause == failure.CauseToolOutage; got != want {
			t.Errorf("rollout %s: %d outages in %d calls, recorded %q; want tainted %v", id, n, calls, rec.FailureCause, want)
		}
		if want {
			tainted++
			if len(runs) != 2 {
				t.Errorf("tainted rollout %s ran %d times; want 2 (one retry)", id, len(runs))
			}
			if rec.FailureKind != failure.KindInfra || !excluded[rec.Task.QueryID] {
				t.Errorf("tainted rollout %s: kind %q, group excluded %v; want infra, excluded", id, rec.FailureKind, excluded[rec.Task.QueryID])
			}
		}
	}
	if tainted == 0 {
		t.Fatal("no rollout was tainted; the test checks nothing")
	}
	if sum.ToolOutages != outages {
		t.Errorf("tool_outages %d, want %d", sum.ToolOutages, outages)
	}
	if sum.InfraFailures[failure.CauseToolOutage] < tainted {
		t.Errorf("infra_failures %v, want at least %d tool_outage", sum.InfraFailures, tainted)
	}
}

// rolloutRecordsByID reads a rollouts.jsonl by rollout id.
func rolloutRecordsByID(t *testing.T, path string) map[string]rollout.RolloutRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rollout.RolloutRecord{}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var r rollout.RolloutRecord
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out[r.ID] = r
	}
}

// deadRunner runs rollout k == dead of every query against an inference
// server that refuses connections (the same failure on every run, as a
// dead endpoint gives) and the others with the healthy runner.
type deadRunner struct {
	healthy, broken Runner
	dead            int
}

func (r deadRunner) Run(ctx context.Context, task rollout.RolloutTask, t Task) *agents.Rollout {
	if task.K == r.dead {
		return r.broken.Run(ctx, task, t)
	}
	return r.healthy.Run(ctx, task, t)
}

// deadURL returns the URL of a port that refuses connections.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// TestZeroPolicyKeepsTodaysSamples checks that --on-infra-failure zero
// trains what a run did before the failure classes: with one rollout of
// every group failing on a dead endpoint, the step files' samples and
// statistics are byte for byte those of the farm without a failure policy
// (FailurePolicy's zero value, the code path from before), retries and
// tool taint on; exclude, on the same failures, trains none of the groups.
func TestZeroPolicyKeepsTodaysSamples(t *testing.T) {
	pair := newSimPair(t, simllm.Faults{})
	dead := deadURL(t)
	run := func(p FailurePolicy) (string, rollout.StepSummary) {
		r := deadRunner{
			healthy: newSimRunner(t, pair.cleanURL, pair.webURL, simRunnerConfig{mode: rollout.ModeMGRPO}),
			broken:  newSimRunner(t, dead, pair.webURL, simRunnerConfig{mode: rollout.ModeMGRPO, retry: llm.RetryPolicy{MaxAttempts: 1}}),
			dead:    1,
		}
		dir := t.TempDir()
		cfg := Config{Run: "zero", Seed: 3, Steps: 1, BatchSize: 3, GroupSize: 4, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Auto: true},
			Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 12, Runner: r, Sink: rollout.DirSink{Dir: dir}, Failures: p}
		return dir, mustRunFarm(t, cfg, pair.tasks)[0]
	}
	today, _ := run(FailurePolicy{})
	zero, sum := run(FailurePolicy{RolloutRetries: 2, RetryWait: time.Millisecond, TaintToolOutages: true, MaxToolOutageFraction: 0.5,
		OnInfra: InfraZero, StopWhenUseless: true, MaxFailedFraction: 0.5})
	for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile} {
		a := mustReadFile(t, filepath.Join(rollout.StepDir(today, 1), name))
		b := mustReadFile(t, filepath.Join(rollout.StepDir(zero, 1), name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s with --on-infra-failure zero differs from today's: %s", name, firstDifference(a, b))
		}
	}
	if sum.FailedRollouts != 3 || sum.RolloutRetries != 6 || sum.InfraFailures[failure.CauseEngineUnreachable] != 9 || sum.ExcludedGroups != 0 {
		t.Errorf("zero policy: %d failed, %d retries, infra %v, %d excluded; want 3, 6, 9 engine_unreachable, 0",
			sum.FailedRollouts, sum.RolloutRetries, sum.InfraFailures, sum.ExcludedGroups)
	}
	excl, esum := run(FailurePolicy{RolloutRetries: 1, RetryWait: time.Millisecond, OnInfra: InfraExclude})
	if esum.ExcludedGroups != 3 || esum.PlannerSamples != 0 || esum.ExecutorSamples != 0 {
		t.Errorf("exclude: %d groups excluded, %d/%d samples; want 3 and none", esum.ExcludedGroups, esum.PlannerSamples, esum.ExecutorSamples)
	}
	if b := mustReadFile(t, filepath.Join(rollout.StepDir(excl, 1), rollout.StatsFile)); len(b) != 0 {
		t.Errorf("exclude: stats.jsonl holds %d bytes; want no line for an excluded group", len(b))
	}
	if e := esum.Excluded[0]; e.Cause != failure.CauseEngineUnreachable || e.Endpoint != dead {
		t.Errorf("excluded group %+v; want cause engine_unreachable at %s", e, dead)
	}
}

// TestDeadSearchStopsTheRun plays a new user's mistake: a --search-url
// where nothing answers. Every search is refused, the rollouts that rely
// on search are infra-tainted after their retries, and the run stops
// without writing the step, naming the cause and the tool, instead of
// training on the zeros.
func TestDeadSearchStopsTheRun(t *testing.T) {
	pair := newSimPair(t, simllm.Faults{})
	runner := newSimRunner(t, pair.cleanURL, pair.webURL, simRunnerConfig{mode: rollout.ModeMGRPO, searchURL: deadURL(t)})
	dir := t.TempDir()
	cfg := Config{Run: "dead-search", Seed: 3, Steps: 2, BatchSize: 2, GroupSize: 4, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Auto: true},
		Weights: rollout.DefaultRewardWeights(), Scorer: exactScorer{}, Concurrency: 8, Runner: runner, Sink: rollout.DirSink{Dir: dir},
		Failures: FailurePolicy{RolloutRetries: 1, RetryWait: time.Millisecond, TaintToolOutages: true, MaxToolOutageFraction: 0.5,
			OnInfra: InfraExclude, StopWhenUseless: true, MaxFailedFraction: 0.5}}
	f, err := New(cfg, pair.tasks)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := f.Run(context.Background())
	if !errors.Is(err, ErrUselessStep) || len(sums) != 0 {
		t.Fatalf("run: %d steps, %v; want none and ErrUselessStep", len(sums), err)
	}
	for _, w := range []string{"still infra failures", "commonest cause tool_outage at tool search (provider serper)", "--resume"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := os.Stat(rollout.StepDir(dir, 1)); err == nil {
		t.Error("the useless step was written")
	}
}
