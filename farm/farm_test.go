package farm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

func TestRolloutTaskIDAndSeed(t *testing.T) {
	a := rollout.RolloutTask{Run: "r/1", Step: 3, QueryID: "q 7", K: 2}
	if got, want := a.ID(), "r%2F1/3/q%207/2"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
	seeds := map[int64]string{}
	for _, c := range []struct {
		seed uint64
		step int
		q    string
		k    int
	}{{1, 1, "q", 0}, {1, 1, "q", 1}, {1, 2, "q", 0}, {2, 1, "q", 0}, {1, 1, "r", 0}, {1, 1, "q1", 0}} {
		s := rollout.RolloutSeed(c.seed, c.step, c.q, c.k)
		if s < 0 {
			t.Errorf("RolloutSeed%v = %d, want ≥ 0", c, s)
		}
		if prev, dup := seeds[s]; dup {
			t.Errorf("RolloutSeed%v equals the seed of %s", c, prev)
		}
		seeds[s] = strings.Repeat("x", 1)
		if again := rollout.RolloutSeed(c.seed, c.step, c.q, c.k); again != s {
			t.Errorf("RolloutSeed%v not stable: %d then %d", c, s, again)
		}
	}
}

func TestFarmConfigValidate(t *testing.T) {
	runner := runnerFunc(func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return nil })
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"valid", func(*Config) {}, nil},
		{"empty", func(c *Config) { *c = Config{} }, []string{"Run: empty", "Steps 0", "BatchSize 0", "GroupSize 0",
			"Mode: empty", "Weights:", "Scorer: nil", "Concurrency 0", "Runner: nil", "Sink: nil"}},
		{"bad mode", func(c *Config) { c.Mode = "grpo" }, []string{"Mode: unknown"}},
		{"no dbar", func(c *Config) { c.DBar = rollout.DBarSpec{} }, []string{"DBar 0"}},
		{"dbar not needed in single", func(c *Config) { c.DBar = rollout.DBarSpec{}; c.Mode = rollout.ModeSingle }, nil},
		{"bad fallback", func(c *Config) { c.ExpertFallback = "guess" }, []string{"ExpertFallback"}},
		{"negative grace", func(c *Config) { c.Grace = -time.Second }, []string{"Grace -1s"}},
		{"single without single agent", func(c *Config) { c.Mode = rollout.ModeSingle; c.Runner = &AgentRunner{} }, []string{"mode single needs"}},
		{"planner missing", func(c *Config) { c.Runner = &AgentRunner{} }, []string{"mode mgrpo needs an AgentRunner with a Planner"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testFarmConfig(t.TempDir(), runner)
			tc.mutate(&cfg)
			err := cfg.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestNewFarmRejectsBadTasks(t *testing.T) {
	runner := runnerFunc(func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return nil })
	cfg := testFarmConfig(t.TempDir(), runner)
	cfg.BatchSize = 3
	if _, err := New(cfg, testTasks(2)); err == nil || !strings.Contains(err.Error(), "BatchSize 3: more than the 2 tasks") {
		t.Errorf("New with 2 tasks for batch 3: err = %v", err)
	}
	dup := append(testTasks(3), Task{ID: "q1", Question: "?", Answer: "!"})
	if _, err := New(cfg, dup); err == nil || !strings.Contains(err.Error(), `duplicate id "q1"`) {
		t.Errorf("New with a duplicate id: err = %v", err)
	}
}

// TestFarmSchedulesEveryUnitOnce checks the scheduling: every rollout task
// of every step runs exactly once with its own seed, tasks wrap around the
// list, no more than Concurrency run at once, and the step files come out
// in task and rollout order.
func TestFarmSchedulesEveryUnitOnce(t *testing.T) {
	var (
		mu    sync.Mutex
		seen  = map[string]rollout.RolloutTask{}
		track inFlight
	)
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		track.enter()
		defer track.leave()
		mu.Lock()
		if _, dup := seen[task.ID()]; dup {
			t.Errorf("%s ran twice", task.ID())
		}
		seen[task.ID()] = task
		mu.Unlock()
		// Later rollouts finish first, so completion order differs from
		// plan order.
		time.Sleep(time.Duration(8-task.K) * time.Millisecond)
		return scriptedRollout(tk, task, 1+task.K%3, tk.Answer)
	})
	dir := t.TempDir()
	cfg := testFarmConfig(dir, runner)
	cfg.Steps, cfg.BatchSize, cfg.GroupSize, cfg.Concurrency = 3, 2, 4, 3
	var progress []Progress
	cfg.OnProgress = func(p Progress) { progress = append(progress, p) }
	cfg.PolicyVersions = func() (int64, int64) { return 42, 7 }
	sums := mustRunFarm(t, cfg, testTasks(3))
	if planner, executor, _ := mustReadStep(t, dir, 1); len(executor) == 0 || planner[0].PolicyVersion != 42 || executor[0].PolicyVersion != 7 {
		t.Errorf("step 1 samples' policy versions: planner %d, executor %v; want 42 and 7 (each model's own)", planner[0].PolicyVersion, executor)
	}
	if sums[0].PolicyVersion != 42 || sums[0].ExecutorPolicyVersion != 7 {
		t.Errorf("summary versions %d, %d; want 42, 7", sums[0].PolicyVersion, sums[0].ExecutorPolicyVersion)
	}

	if got, want := len(seen), 3*2*4; got != want {
		t.Errorf("%d rollouts ran, want %d", got, want)
	}
	if peak := track.peak.Load(); peak > 3 || peak < 2 {
		t.Errorf("peak rollouts in flight = %d, want 2…3 (Concurrency 3)", peak)
	}
	for id, task := range seen {
		if want := rollout.RolloutSeed(7, task.Step, task.QueryID, task.K); task.Seed != want {
			t.Errorf("%s: seed %d, want %d", id, task.Seed, want)
		}
		if task.PolicyVersion != 42 {
			t.Errorf("%s: policy version %d, want 42", id, task.PolicyVersion)
		}
	}
	// Step 2 takes tasks 2 and 0 (wrapping), step 3 tasks 1 and 2.
	wantQueries := [][]string{{"q0", "q1"}, {"q2", "q0"}, {"q1", "q2"}}
	for s, want := range wantQueries {
		planner, _, stats := mustReadStep(t, dir, s+1)
		var got []string
		for _, st := range stats {
			got = append(got, st.QueryID)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("step %d queries %v, want %v", s+1, got, want)
		}
		for i, smp := range planner {
			if wantQ, wantK := want[i/4], i%4; smp.QueryID != wantQ || smp.Rollout != wantK {
				t.Errorf("step %d planner sample %d is %s/%d, want %s/%d", s+1, i, smp.QueryID, smp.Rollout, wantQ, wantK)
			}
		}
	}
	if len(sums) != 3 || sums[0].Rollouts != 8 || sums[0].PlannerSamples != 8 || sums[0].ExecutorSamples != 2*4*2 {
		t.Errorf("summaries %+v: want 3 steps of 8 rollouts, 8 planner and 16 executor samples", sums)
	}
	if len(progress) != 24 || progress[7].Done != 8 || progress[7].Total != 8 || progress[8].Step != 2 || progress[8].Done != 1 {
		t.Errorf("progress reports: %d, want 24 counting 1…8 per step", len(progress))
	}
	if p := progress[7]; p.MeanReward != 1 || p.Errors != 0 || p.Rate <= 0 {
		t.Errorf("final progress of step 1 = %+v, want mean reward 1, no errors, a rate", p)
	}
}

// TestFarmRecordsFailedRollouts checks that failing rollouts are kept,
// scored 0 with invalid format and counted.
func TestFarmRecordsFailedRollouts(t *testing.T) {
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		switch {
		case task.QueryID == "q0" && task.K == 1:
			// The planner's model call gave up after one successful turn.
			r := scriptedRollout(tk, task, 1, tk.Answer)
			r.Planner.Error, r.Planner.FormatOK = "turn 1: give up after 6 attempts", false
			return r
		case task.QueryID == "q0" && task.K == 2:
			panic("boom")
		case task.QueryID == "q1" && task.K == 0:
			return nil
		case task.QueryID == "q1" && task.K == 3:
			// Turns without token data cannot form sequences.
			r := scriptedRollout(tk, task, 1, tk.Answer)
			r.Planner.Turns[1].PromptIDs = nil
			return r
		}
		return scriptedRollout(tk, task, 2, tk.Answer)
	})
	dir := t.TempDir()
	sums := mustRunFarm(t, testFarmConfig(dir, runner), testTasks(2))
	planner, _, stats := mustReadStep(t, dir, 1)

	want := rollout.DefaultRewardWeights().MainReward(true, 1)
	wantMain := map[string][]float64{"q0": {want, 0, 0, want}, "q1": {0, want, want, 0}}
	for _, st := range stats {
		for k, r := range st.MainRewards {
			if r != wantMain[st.QueryID][k] {
				t.Errorf("%s rollout %d: main reward %v, want %v", st.QueryID, k, r, wantMain[st.QueryID][k])
			}
		}
	}
	if got := sums[0].FailedRollouts; got != 4 {
		t.Errorf("failed rollouts = %d, want 4", got)
	}
	if got := sums[0].SequenceErrors; got != 1 {
		t.Errorf("sequence errors = %d, want 1", got)
	}
	// The planner that failed mid-way still trains on its turns (with
	// reward 0); panicked, nil and token-less ones yield no sample.
	if got := len(planner); got != 8-3 {
		t.Errorf("%d planner samples, want 5", got)
	}
	lines := bytes.Split(bytes.TrimSpace(mustReadFile(t, filepath.Join(rollout.StepDir(dir, 1), rollout.RolloutsFile))), []byte("\n"))
	if len(lines) != 8 {
		t.Fatalf("%d lines in rollouts.jsonl, want 8", len(lines))
	}
	wantErr := []string{"", "give up", "runner panicked: boom", "", "runner returned no rollout", "", "", "planner: turn 1: turn has no usable token data"}
	for i, line := range lines {
		var rec struct {
			ID         string                `json:"id"`
			Question   string                `json:"question"`
			GoldAnswer string                `json:"gold_answer"`
			Error      string                `json:"error"`
			Scores     rollout.RolloutScores `json:"scores"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if q := i / 4; rec.GoldAnswer != fmt.Sprintf("a%d", q) || rec.Question != fmt.Sprintf("question %d?", q) {
			t.Errorf("line %d (%s): question %q, gold answer %q; want the task's", i, rec.ID, rec.Question, rec.GoldAnswer)
		}
		if rec.Scores.FormatOK != (rec.Scores.FormatReason == "") {
			t.Errorf("line %d (%s): format_ok %v with format_reason %q; every invalid format needs a reason", i, rec.ID, rec.Scores.FormatOK, rec.Scores.FormatReason)
		}
		if wantErr[i] != "" && !strings.Contains(rec.Scores.FormatReason, wantErr[i]) {
			t.Errorf("line %d (%s): format_reason %q does not give the cause %q", i, rec.ID, rec.Scores.FormatReason, wantErr[i])
		}
		if !strings.Contains(rec.Error, wantErr[i]) || (wantErr[i] == "") != (rec.Error == "") {
			t.Errorf("line %d (%s): error %q, want %q", i, rec.ID, firstLine(rec.Error), wantErr[i])
		}
		if rec.Error != "" && (rec.Scores.Main != 0 || rec.Scores.FormatOK) {
			t.Errorf("line %d (%s): failed rollout scored %+v, want 0 with invalid format", i, rec.ID, rec.Scores)
		}
	}
}

// TestFarmKeepsPartialTurns: a rollout whose planner's last generation
// was aborted by the server (and not finished by a retry) keeps that
// partial turn: its sample ends with the partial completion (mask 1, the
// sampler's logprobs), finishes with reason "abort", and is scored as the
// failed rollout it is; rollouts.jsonl records the abort.
func TestFarmKeepsPartialTurns(t *testing.T) {
	partial := []int32{4242, 4243}
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		r := scriptedRollout(tk, task, 1, tk.Answer)
		if task.QueryID == "q0" && task.K == 1 {
			last := r.Planner.Turns[len(r.Planner.Turns)-1]
			prompt := append(append([]int32(nil), last.PromptIDs...), append(last.CompletionIDs, 7)...)
			r.Planner.Turns = append(r.Planner.Turns, &llm.Turn{PromptIDs: prompt, CompletionIDs: partial, Logprobs: []float64{-0.5, -0.75},
				FinishReason: "abort", Abort: &llm.Abort{By: llm.AbortedByServer, Reason: "Aborted"}})
			r.Planner.Steps = append(r.Planner.Steps, agents.Step{})
			r.Planner.Error, r.Planner.FormatOK, r.Planner.Answer, r.Answer = "turn 2: generation aborted by the server", false, "", ""
		}
		return r
	})
	dir := t.TempDir()
	sums := mustRunFarm(t, testFarmConfig(dir, runner), testTasks(2))
	if sums[0].FailedRollouts != 1 {
		t.Errorf("failed rollouts = %d, want 1", sums[0].FailedRollouts)
	}
	planner, _, _ := mustReadStep(t, dir, 1)
	found := false
	for _, smp := range planner {
		if smp.QueryID != "q0" || smp.Rollout != 1 {
			if smp.FinishReason == "abort" {
				t.Errorf("%s/%d: finish reason abort without a partial turn", smp.QueryID, smp.Rollout)
			}
			continue
		}
		found = true
		n := len(smp.InputIDs)
		if smp.FinishReason != "abort" || smp.FormatOK || smp.Reward != 0 {
			t.Errorf("partial sample: finish %q, format_ok %v, reward %v; want abort, false, 0", smp.FinishReason, smp.FormatOK, smp.Reward)
		}
		if !slices.Equal(smp.InputIDs[n-2:], wideIDs(partial)) || !slices.Equal(smp.LossMask[n-2:], []int8{1, 1}) || !slices.Equal(smp.Logprobs[n-2:], []float64{-0.5, -0.75}) {
			t.Errorf("partial sample ends with ids %v mask %v logprobs %v, want the partial completion", smp.InputIDs[n-2:], smp.LossMask[n-2:], smp.Logprobs[n-2:])
		}
	}
	if !found {
		t.Fatal("no sample of the rollout with the partial turn")
	}
	rollouts := string(mustReadFile(t, filepath.Join(rollout.StepDir(dir, 1), rollout.RolloutsFile)))
	if !strings.Contains(rollouts, `"finish_reason":"abort","abort":{"by":"server","reason":"Aborted"}`) {
		t.Errorf("rollouts.jsonl does not record the abort of the partial turn")
	}
}

func TestScoringRewards(t *testing.T) {
	w := rollout.DefaultRewardWeights()
	task := Task{ID: "q", Question: "Q?", Answer: "Paris"}
	rt := rollout.RolloutTask{Run: "r", Step: 1, QueryID: "q"}
	tree := func(answer string) *agents.Rollout {
		r := scriptedRollout(task, rt, 3, answer)
		r.Executors[1].FormatOK = false // no report
		return r
	}
	tests := []struct {
		name       string
		scoring    Scoring
		answer     string
		wantMain   float64
		wantSubs   []float64
		wantJudged int
		wantErr    string
	}{
		{"correct, fallback format", Scoring{Mode: rollout.ModeMGRPO, Weights: w, Scorer: exactScorer{}, ExpertFallback: rollout.ExpertFallbackFormat},
			" paris ", 0.1 + 0.9, []float64{0.1 + 0.4 + 0.5, 0, 0.1 + 0.4 + 0.5}, 0, ""},
		{"wrong, fallback zero", Scoring{Mode: rollout.ModeMGRPO, Weights: w, Scorer: exactScorer{}, ExpertFallback: rollout.ExpertFallbackZero},
			"Lyon", 0.1, []float64{0.1, 0, 0.1}, 0, ""},
		{"correct, judge 0.5", Scoring{Mode: rollout.ModeMGRPO, Weights: w, Scorer: exactScorer{}, Expert: &countingJudge{score: 0.5}},
			"Paris", 1, []float64{0.1 + 0.4 + 0.25, 0, 0.1 + 0.4 + 0.25}, 2, ""},
		{"judge fails", Scoring{Mode: rollout.ModeMGRPO, Weights: w, Scorer: exactScorer{}, Expert: &countingJudge{err: errors.New("503")}},
			"Paris", 1, []float64{0.5, 0, 0.5}, 2, ""},
		{"scorer fails", Scoring{Mode: rollout.ModeMGRPO, Weights: w, Scorer: failingScorer{}, ExpertFallback: rollout.ExpertFallbackFormat},
			"Paris", 0.1, []float64{0.6, 0, 0.6}, 0, "judge unreachable"},
		{"frozen-sub judges no executor", Scoring{Mode: rollout.ModeFrozenSub, Weights: w, Scorer: exactScorer{}, Expert: &countingJudge{score: 1}},
			"Paris", 1, []float64{0, 0, 0}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Execute(context.Background(), runnerFunc(func(context.Context, rollout.RolloutTask, Task) *agents.Rollout { return tree(tc.answer) }), tc.scoring, rt, task)
			sc := res.Scores
			if math.Abs(sc.Main-tc.wantMain) > 1e-12 {
				t.Errorf("main reward %v, want %v", sc.Main, tc.wantMain)
			}
			for i, want := range tc.wantSubs {
				if got := sc.Subs[i].Reward; math.Abs(got-want) > 1e-12 {
					t.Errorf("sub %d reward %v, want %v", i, got, want)
				}
			}
			if !strings.Contains(sc.ScoreError, tc.wantErr) || (tc.wantErr == "") != (sc.ScoreError == "") {
				t.Errorf("score error %q, want %q", sc.ScoreError, tc.wantErr)
			}
			if j, ok := tc.scoring.Expert.(*countingJudge); ok {
				if len(j.calls) != tc.wantJudged {
					t.Errorf("judge called %d times, want %d (never for an invalid report)", len(j.calls), tc.wantJudged)
				}
				if j.err != nil && !strings.Contains(sc.Subs[0].ExpertError, "503") {
					t.Errorf("sub 0 expert error %q, want the judge's", sc.Subs[0].ExpertError)
				}
				if j.err == nil && tc.wantJudged > 0 && sc.Subs[0].ExpertRaw != "SCORE: 0.5" {
					t.Errorf("sub 0 raw judge output %q, want it kept", sc.Subs[0].ExpertRaw)
				}
			}
		})
	}
}

// TestFarmDBarAuto checks that the first step calibrates d̄ on its own d_k
// and later steps use the previous step's.
func TestFarmDBarAuto(t *testing.T) {
	runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		d := 1 + task.K%3 // step 1: d_k in 1…3
		if task.Step == 2 {
			d = 5
		}
		return scriptedRollout(tk, task, d, tk.Answer)
	})
	dir := t.TempDir()
	cfg := testFarmConfig(dir, runner)
	cfg.Steps, cfg.DBar = 3, rollout.DBarSpec{Auto: true}
	sums := mustRunFarm(t, cfg, testTasks(2))
	for i, want := range []int{3, 3, 5} {
		if sums[i].DBar != want {
			t.Errorf("step %d: dbar %d, want %d", i+1, sums[i].DBar, want)
		}
		_, exec, stats := mustReadStep(t, dir, i+1)
		if stats[0].DBar != want || len(exec) != 2*4*want {
			t.Errorf("step %d: stats dbar %d and %d executor samples, want %d and %d", i+1, stats[0].DBar, len(exec), want, 2*4*want)
		}
	}
	if got := sums[1].Counters.DroppedSubTrajectories; got != 2*4*2 {
		t.Errorf("step 2 dropped %d sub-trajectories, want 16", got)
	}
}

func TestFarmModes(t *testing.T) {
	delegating := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		answer := tk.Answer
		if task.K%2 == 1 {
			answer = "wrong"
		}
		return scriptedRollout(tk, task, task.K%3, answer)
	})
	single := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		r := scriptedRollout(tk, task, 0, tk.Answer)
		r.Planner.Role = agents.RoleSingle
		return r
	})
	tests := []struct {
		mode                rollout.Mode
		runner              Runner
		wantExec, wantDBar  int
		wantSubRewardsEmpty bool
	}{
		{rollout.ModeMGRPO, delegating, 2 * 4 * 2, 2, false},
		{rollout.ModeFrozenSub, delegating, 0, 0, true},
		{rollout.ModeSingle, single, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testFarmConfig(dir, tc.runner)
			cfg.Mode = tc.mode
			sums := mustRunFarm(t, cfg, testTasks(2))
			planner, exec, stats := mustReadStep(t, dir, 1)
			if len(planner) != 8 || len(exec) != tc.wantExec {
				t.Errorf("%d planner and %d executor samples, want 8 and %d", len(planner), len(exec), tc.wantExec)
			}
			for _, s := range planner {
				if s.Role != rollout.RolePlanner {
					t.Errorf("planner sample with role %q", s.Role)
				}
			}
			for _, st := range stats {
				if st.DBar != tc.wantDBar || (len(st.SubRewards) == 0) != tc.wantSubRewardsEmpty {
					t.Errorf("%s: dbar %d, sub rewards %v; want dbar %d, empty %v", st.QueryID, st.DBar, st.SubRewards, tc.wantDBar, tc.wantSubRewardsEmpty)
				}
				if tc.mode == rollout.ModeFrozenSub && strings.Join(strings.Fields(strings.Trim(jsonString(st.D), "[]")), "") != "0,1,2,0" {
					t.Errorf("%s: d = %v, want the observed [0 1 2 0]", st.QueryID, st.D)
				}
			}
			if sums[0].DBar != tc.wantDBar {
				t.Errorf("summary dbar %d, want %d", sums[0].DBar, tc.wantDBar)
			}
		})
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestFarmInterrupted cancels the run in the middle of step 2 while some
// rollouts ignore cancellation: Run returns soon after the grace period with
// step 1's summary and an error wrapping the cause, and step 2 leaves no
// directory behind.
func TestFarmInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stuck := make(chan struct{})
	defer close(stuck)
	var once sync.Once
	runner := runnerFunc(func(rctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		if task.Step == 2 && task.K == 0 {
			once.Do(cancel)
			<-stuck // ignores cancellation: must be abandoned
		}
		return scriptedRollout(tk, task, 1, tk.Answer)
	})
	dir := t.TempDir()
	cfg := testFarmConfig(dir, runner)
	cfg.Steps, cfg.Grace = 3, 100*time.Millisecond
	f, err := New(cfg, testTasks(2))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sums, err := f.Run(ctx)
	elapsed := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want one wrapping context.Canceled", err)
	}
	if len(sums) != 1 || sums[0].Step != 1 {
		t.Errorf("summaries %+v, want step 1's only", sums)
	}
	if elapsed > 2*time.Second {
		t.Errorf("Run took %v after a cancel with 100ms grace", elapsed)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "step-000001,summary.jsonl" {
		t.Errorf("output holds %v, want step-000001 and its summary only", names)
	}
}

// TestFarmInterruptedStepFinishesInGrace cancels after every rollout of the
// step has started: they finish within the grace period, so the step is
// complete and written, and the run stops before the next step.
func TestFarmInterruptedStepFinishesInGrace(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var started sync.WaitGroup
	started.Add(8)
	go func() { started.Wait(); cancel(errors.New("SIGINT")) }()
	runner := runnerFunc(func(rctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		started.Done()
		<-ctx.Done() // the run's context, not rctx: keeps going into the grace period
		return scriptedRollout(tk, task, 1, tk.Answer)
	})
	dir := t.TempDir()
	cfg := testFarmConfig(dir, runner)
	cfg.Steps, cfg.Concurrency, cfg.Grace = 2, 8, 10*time.Second
	f, err := New(cfg, testTasks(2))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := f.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "SIGINT") {
		t.Fatalf("Run error = %v, want the cancel cause", err)
	}
	if len(sums) != 1 {
		t.Fatalf("%d summaries, want 1", len(sums))
	}
	if _, err := os.Stat(rollout.StepDir(dir, 1)); err != nil {
		t.Errorf("step 1 not written: %v", err)
	}
	if _, err := os.Stat(rollout.StepDir(dir, 2)); err == nil {
		t.Errorf("step 2 written after the cancellation")
	}
}

// TestFarmDeterministic runs the same configuration twice with rollouts
// finishing in different orders: the step files are byte-identical.
func TestFarmDeterministic(t *testing.T) {
	run := func(jitter bool) string {
		runner := runnerFunc(func(ctx context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
			if jitter {
				time.Sleep(time.Duration(task.Seed%5) * time.Millisecond)
			}
			answer := tk.Answer
			if task.Seed%3 == 0 {
				answer = "no"
			}
			return scriptedRollout(tk, task, int(task.Seed%4), answer)
		})
		dir := t.TempDir()
		cfg := testFarmConfig(dir, runner)
		cfg.Steps, cfg.DBar, cfg.Concurrency = 2, rollout.DBarSpec{Auto: true}, 8
		mustRunFarm(t, cfg, testTasks(3))
		return dir
	}
	a, b := run(false), run(true)
	for step := 1; step <= 2; step++ {
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			x := mustReadFile(t, filepath.Join(rollout.StepDir(a, step), name))
			y := mustReadFile(t, filepath.Join(rollout.StepDir(b, step), name))
			if !bytes.Equal(x, y) {
				t.Errorf("step %d %s differs between runs with the same seed", step, name)
			}
		}
	}
}
