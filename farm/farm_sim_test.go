package farm

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestFarmPlaysTheSimWorld runs two steps of mode mgrpo against the sim
// world through real clients and tools, and checks the step files against
// what the sim server emitted: every sampled token id and logprob appears in
// the samples with mask 1 and nothing else has mask 1; rewards match the
// scorer; advantages match the formulas recomputed from stats.jsonl; every
// query has exactly K planner and K·d̄ executor samples; and a second run
// with the same seed writes byte-identical files.
func TestFarmPlaysTheSimWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("plays whole rollouts against the sim world")
	}
	const steps, B, K = 2, 4, 4
	tasks := simTasks(t, 6)
	gold := map[string]string{}
	for _, tk := range tasks {
		gold[tk.ID] = tk.Answer
	}
	w := rollout.DefaultRewardWeights()
	// Both runs play the same servers: observations hold the sim web's
	// URLs, and a new server would listen on another port.
	cfg := simllm.DefaultConfig()
	cfg.Seed = 5
	llmURL, webURL := startSimServers(t, cfg)
	run := func() (string, *recordingRunner, []rollout.StepSummary) {
		rec := &recordingRunner{inner: newSimRunner(t, llmURL, webURL, simRunnerConfig{mode: rollout.ModeMGRPO})}
		dir := t.TempDir()
		fc := Config{Run: "e2e", Seed: 3, Steps: steps, BatchSize: B, GroupSize: K, Mode: rollout.ModeMGRPO, DBar: rollout.DBarSpec{Auto: true},
			Weights: w, Scorer: exactScorer{}, Concurrency: 12, Runner: rec, Sink: rollout.DirSink{Dir: dir}}
		return dir, rec, mustRunFarm(t, fc, tasks)
	}
	dir, rec, sums := run()

	accuracy := 0.0
	for s := 1; s <= steps; s++ {
		planner, executor, stats := mustReadStep(t, dir, s)
		sum := sums[s-1]
		accuracy += sum.Accuracy
		if sum.FailedRollouts != 0 || sum.DriftEvents != 0 || sum.SequenceErrors != 0 {
			t.Fatalf("step %d: %d failed rollouts, %d drift events, %d sequence errors; want none from the default sim", s, sum.FailedRollouts, sum.DriftEvents, sum.SequenceErrors)
		}
		dropped := 0
		for _, st := range stats {
			checkMoments(t, st.MainRewards, st.MainMean, st.MainStd, st.QueryID+" main")
			checkMoments(t, st.SubRewards, st.SubMean, st.SubStd, st.QueryID+" sub")
			var qPlanner, qExec []rollout.Sample
			for _, smp := range planner {
				if smp.QueryID == st.QueryID {
					qPlanner = append(qPlanner, smp)
				}
			}
			for _, smp := range executor {
				if smp.QueryID == st.QueryID {
					qExec = append(qExec, smp)
				}
			}
			if len(qPlanner) != K || len(qExec) != K*st.DBar || st.DBar != sum.DBar {
				t.Errorf("step %d %s: %d planner and %d executor samples with dbar %d, want %d and %d", s, st.QueryID, len(qPlanner), len(qExec), st.DBar, K, K*st.DBar)
			}
			correct := make([]float64, K)
			subReward := map[rollout.SubRef]float64{}
			for k := range K {
				tree := rec.trees[rollout.RolloutTask{Run: "e2e", Step: s, QueryID: st.QueryID, K: k}.ID()]
				if tree.Planner.Error != "" {
					t.Fatalf("step %d %s/%d: planner error %s", s, st.QueryID, k, tree.Planner.Error)
				}
				if tree.Planner.FormatOK {
					v, _ := exactScorer{}.Score(context.Background(), "", tree.Answer, gold[st.QueryID])
					correct[k] = v.Correct
				}
				wantMain := w.MainReward(tree.Planner.FormatOK, correct[k])
				smp := qPlanner[k]
				if smp.Rollout != k || st.MainRewards[k] != wantMain || smp.Reward != wantMain {
					t.Errorf("step %d %s/%d: sample rollout %d, stats reward %v, sample reward %v; want reward %v", s, st.QueryID, k, smp.Rollout, st.MainRewards[k], smp.Reward, wantMain)
				}
				checkAdvantage(t, smp, st.MainRewards, st.MainMean, st.MainStd)
				checkTokens(t, smp, tree.Planner.Turns)
				if st.D[k] != len(tree.Executors) {
					t.Errorf("step %d %s/%d: d = %d, tree has %d executors", s, st.QueryID, k, st.D[k], len(tree.Executors))
				}
				kept := 0
				for i, e := range tree.Executors {
					ref := rollout.SubRef{Rollout: k, SubIndex: i}
					expert := 0.0
					if e.FormatOK {
						expert = 1 // fallback "format"
					}
					subReward[ref] = w.SubReward(e.FormatOK, correct[k], expert)
					for _, smp := range qExec {
						if smp.DuplicateOf == nil && smp.Rollout == k && *smp.SubIndex == i {
							kept++
							checkTokens(t, smp, e.Turns)
						}
					}
				}
				dropped += len(tree.Executors) - kept
			}
			var subRewards []float64
			for _, smp := range qExec {
				src := rollout.SubRef{Rollout: smp.Rollout, SubIndex: *smp.SubIndex}
				if smp.DuplicateOf != nil {
					src = *smp.DuplicateOf
					if src.Rollout != smp.Rollout && st.D[smp.Rollout] != 0 {
						t.Errorf("step %d %s: rollout %d with %d executors has a duplicate from rollout %d", s, st.QueryID, smp.Rollout, st.D[smp.Rollout], src.Rollout)
					}
					tree := rec.trees[rollout.RolloutTask{Run: "e2e", Step: s, QueryID: st.QueryID, K: src.Rollout}.ID()]
					checkTokens(t, smp, tree.Executors[src.SubIndex].Turns)
				}
				if want := subReward[src]; smp.Reward != want {
					t.Errorf("step %d %s: executor sample %d/%d reward %v, want %v", s, st.QueryID, smp.Rollout, *smp.SubIndex, smp.Reward, want)
				}
				subRewards = append(subRewards, smp.Reward)
				checkAdvantage(t, smp, st.SubRewards, st.SubMean, st.SubStd)
			}
			if !slices.Equal(subRewards, st.SubRewards) {
				t.Errorf("step %d %s: executor sample rewards %v, stats sub_rewards %v", s, st.QueryID, subRewards, st.SubRewards)
			}
		}
		if dropped != sum.Counters.DroppedSubTrajectories {
			t.Errorf("step %d: %d executor trajectories missing from the samples, %d counted as dropped", s, dropped, sum.Counters.DroppedSubTrajectories)
		}
	}
	t.Logf("summaries: %+v", sums)
	if accuracy == 0 || accuracy == steps {
		t.Errorf("mean accuracy %v over %d steps: want a policy that is right sometimes, not always", accuracy/steps, steps)
	}

	again, _, _ := run()
	for s := 1; s <= steps; s++ {
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			a, err := os.ReadFile(filepath.Join(rollout.StepDir(dir, s), name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(rollout.StepDir(again, s), name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("step %d %s: a second run with the same seed wrote different bytes: %s", s, name, firstDifference(a, b))
			}
		}
	}
}

// checkTokens checks that smp is exactly the trajectory of turns: the last
// turn's prompt and completion, every turn's completion at its position with
// mask 1 and the server's logprobs, and mask 0 with logprob 0 elsewhere.
func checkTokens(t *testing.T, smp rollout.Sample, turns []*llm.Turn) {
	t.Helper()
	name := smp.QueryID + "/" + string(smp.Role)
	last := turns[len(turns)-1]
	if want := len(last.PromptIDs) + len(last.CompletionIDs); len(smp.InputIDs) != want {
		t.Errorf("%s: %d tokens, want %d", name, len(smp.InputIDs), want)
		return
	}
	sampled := make([]bool, len(smp.InputIDs))
	for ti, turn := range turns {
		p, c := turn.PromptIDs, turn.CompletionIDs
		if !slices.Equal(smp.InputIDs[:len(p)], wideIDs(p)) {
			t.Errorf("%s turn %d: prompt ids are not a prefix of the sample", name, ti)
			return
		}
		for j, id := range c {
			at := len(p) + j
			if smp.InputIDs[at] != int(id) || smp.LossMask[at] != 1 || smp.Logprobs[at] != turn.Logprobs[j] {
				t.Errorf("%s turn %d token %d: sample has id %d mask %d logprob %v, server sampled %d with logprob %v",
					name, ti, j, smp.InputIDs[at], smp.LossMask[at], smp.Logprobs[at], id, turn.Logprobs[j])
				return
			}
			sampled[at] = true
		}
	}
	for i, m := range smp.LossMask {
		if !sampled[i] && (m != 0 || smp.Logprobs[i] != 0) {
			t.Errorf("%s: token %d has mask %d and logprob %v but was not sampled", name, i, m, smp.Logprobs[i])
			return
		}
	}
}

// checkMoments checks a stats line's μ and population σ against its
// rewards.
func checkMoments(t *testing.T, rewards []float64, mean, std float64, name string) {
	t.Helper()
	if len(rewards) == 0 {
		return
	}
	var mu, v float64
	for _, r := range rewards {
		mu += r
	}
	mu /= float64(len(rewards))
	for _, r := range rewards {
		v += (r - mu) * (r - mu)
	}
	sigma := math.Sqrt(v / float64(len(rewards)))
	if math.Abs(mu-mean) > 1e-12 || math.Abs(sigma-std) > 1e-12 {
		t.Errorf("%s: stats μ %v σ %v, recomputed %v %v", name, mean, std, mu, sigma)
	}
}

// checkAdvantage checks Â = (R − μ)/(σ + ε) from the stats, 0 for a group
// whose rewards are all equal.
func checkAdvantage(t *testing.T, smp rollout.Sample, rewards []float64, mean, std float64) {
	t.Helper()
	want := (smp.Reward - mean) / (std + rollout.Epsilon)
	if slices.Min(rewards) == slices.Max(rewards) {
		want = 0
	}
	if math.Abs(smp.Advantage-want) > 1e-9 {
		t.Errorf("%s/%s rollout %d: advantage %v, want %v from reward %v, μ %v, σ %v", smp.QueryID, smp.Role, smp.Rollout, smp.Advantage, want, smp.Reward, mean, std)
	}
}

// firstDifference shows where a and b first differ.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-120)
	return fmt.Sprintf("at byte %d: %q vs %q", i, a[from:min(len(a), i+60)], b[from:min(len(b), i+60)])
}
