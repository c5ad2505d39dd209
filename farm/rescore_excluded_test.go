package farm

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
)

// excludedRun writes a two-step run of knownGroups with d = 2 executors
// per rollout and --dbar auto, in which rollout 1 of q2 fails on the
// infra side in every step (after delegating 6 executors, so that its d_k
// would move an automatic d̄ if it counted): with exclude, q2 leaves both
// steps' batches.
func excludedRun(t *testing.T) (string, Config) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	tasks := testTasks(len(knownGroups))
	judge := taskJudge{}
	runner := runnerFunc(func(_ context.Context, task rollout.RolloutTask, tk Task) *agents.Rollout {
		var q int
		fmt.Sscanf(tk.ID, "q%d", &q)
		g := knownGroups[q][task.K]
		answer := "wrong"
		if g.correct {
			answer = tk.Answer
		}
		d := 2
		broken := q == 2 && task.K == 1
		if broken {
			d = 6
		}
		r := scriptedRollout(tk, task, d, answer)
		if !g.formatOK {
			r.Planner.FormatOK = false
		}
		if broken {
			p := r.Planner
			p.Error, p.FailureKind, p.FailureCause, p.FailureEndpoint = "gave up after 6 attempts", failure.KindInfra, failure.CauseEngine5xx, "http://engine-1"
			p.FormatOK, p.Final, p.Answer, r.Answer = false, "", "", ""
		}
		for i, e := range r.Executors {
			e.Task = fmt.Sprintf("%s/%d/%d", tk.ID, task.K, i)
			judge[e.Task] = g.expert
		}
		return r
	})
	cfg := testFarmConfig(dir, runner)
	cfg.Steps, cfg.BatchSize, cfg.GroupSize, cfg.DBar, cfg.Concurrency = 2, len(knownGroups), 2, rollout.DBarSpec{Auto: true}, 1
	cfg.Expert = judge
	cfg.Failures = FailurePolicy{OnInfra: InfraExclude, MaxToolOutageFraction: 0.5, MaxFailedFraction: 0.5}
	sums := mustRunFarm(t, cfg, tasks)
	for _, s := range sums {
		if s.ExcludedGroups != 1 || len(s.Excluded) != 1 || s.Excluded[0].QueryID != "q2" {
			t.Fatalf("step %d: excluded %+v, want q2 alone (the fixture broke)", s.Step, s.Excluded)
		}
	}
	return dir, cfg
}

// TestRescoreKeepsExcludedGroupsExcluded checks that a run whose steps
// excluded a group is rescored: with unchanged settings every step file
// and the summaries' reward-derived fields come out as the run wrote them
// (the excluded group's rollouts.jsonl lines included, its d_k left out
// of the automatic d̄); with new weights the trained groups follow the
// reference advantages, the excluded group stays out of the samples and
// statistics, and each step's report counts it.
func TestRescoreKeepsExcludedGroupsExcluded(t *testing.T) {
	from, c := excludedRun(t)
	to := filepath.Join(t.TempDir(), "same")
	steps, err := Rescore(context.Background(), rescoreConfig(from, to, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps rescored, want 2", len(steps))
	}
	for _, s := range steps {
		if s.Excluded != 1 || s.Groups != len(knownGroups) || s.Rollouts != 2*len(knownGroups) {
			t.Errorf("step %d: excluded %d, groups %d, rollouts %d; want 1, %d, %d", s.Step, s.Excluded, s.Groups, s.Rollouts, len(knownGroups), 2*len(knownGroups))
		}
		if s.DBar != 2 || s.WasDBar != 2 {
			t.Errorf("step %d: d̄ %d (was %d), want 2: the excluded rollout's d_k = 6 must not count", s.Step, s.DBar, s.WasDBar)
		}
		for role, ch := range s.Roles {
			if ch.SignChanged != 0 || ch.BecameZeroVariance != 0 || ch.MeanAbsDelta != 0 {
				t.Errorf("step %d %s: changes %+v, want none", s.Step, role, ch)
			}
		}
		for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
			a := mustReadFile(t, filepath.Join(rollout.StepDir(from, s.Step), name))
			b := mustReadFile(t, filepath.Join(rollout.StepDir(to, s.Step), name))
			if string(a) != string(b) {
				t.Errorf("step %d: %s differs after a rescore with unchanged settings", s.Step, name)
			}
		}
	}
	was, err := rollout.ReadSummaries(filepath.Join(from, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	now, err := rollout.ReadSummaries(filepath.Join(to, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range was {
		w, n := was[i], now[i]
		if w.MeanMainReward != n.MeanMainReward || w.Accuracy != n.Accuracy || w.MeanSubReward != n.MeanSubReward || w.Counters != n.Counters ||
			w.PlannerSamples != n.PlannerSamples || w.ExecutorSamples != n.ExecutorSamples || w.DBar != n.DBar || w.ExcludedGroups != n.ExcludedGroups ||
			w.Usage.JudgeCalls != n.Usage.JudgeCalls || w.MainZeroVarianceFraction != n.MainZeroVarianceFraction {
			t.Errorf("step %d: rescored summary %+v\nwant the run's %+v", w.Step, n, w)
		}
	}

	// New weights: the trained groups follow the reference math.
	to = filepath.Join(t.TempDir(), "new")
	rc := rescoreConfig(from, to, c)
	rc.Weights = rollout.RewardWeights{Alpha1: 0, Alpha2: 1, Beta1: 0.1, Beta2: 0.6, Beta3: 0.3}
	if steps, err = Rescore(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Excluded != 1 {
			t.Errorf("step %d: excluded %d, want 1", s.Step, s.Excluded)
		}
		planner, executor, stats := mustReadStep(t, to, s.Step)
		if len(stats) != len(knownGroups)-1 {
			t.Fatalf("step %d: %d statistics lines, want %d (q2 excluded)", s.Step, len(stats), len(knownGroups)-1)
		}
		for _, st := range stats {
			var q int
			fmt.Sscanf(st.QueryID, "q%d", &q)
			if q == 2 {
				t.Errorf("step %d: the excluded q2 has a statistics line", s.Step)
			}
			var main, sub []float64
			for _, r := range knownGroups[q] {
				fm, cr := 0.0, 0.0
				if r.formatOK {
					fm = 1
				}
				if r.correct {
					cr = 1
				}
				main = append(main, rc.Weights.MainReward(r.formatOK, cr)*fm)
				sub = append(sub, rc.Weights.Beta1+rc.Weights.Beta2*cr+rc.Weights.Beta3*r.expert)
			}
			refMain, refSub := rollouttest.ReferenceAdvantages(main), rollouttest.ReferenceAdvantages(sub)
			for _, p := range planner {
				if p.QueryID == st.QueryID && math.Abs(p.Advantage-refMain[p.Rollout]) > 1e-9 {
					t.Errorf("step %d %s rollout %d: planner advantage %v, reference %v", s.Step, st.QueryID, p.Rollout, p.Advantage, refMain[p.Rollout])
				}
			}
			for _, e := range executor {
				if e.QueryID == st.QueryID && math.Abs(e.Advantage-refSub[e.Rollout]) > 1e-9 {
					t.Errorf("step %d %s rollout %d: executor advantage %v, reference %v", s.Step, st.QueryID, e.Rollout, e.Advantage, refSub[e.Rollout])
				}
			}
		}
		for _, p := range append(planner, executor...) {
			if p.QueryID == "q2" {
				t.Fatalf("step %d: a sample of the excluded q2", s.Step)
			}
		}
		recs := rolloutRecordsByID(t, filepath.Join(rollout.StepDir(to, s.Step), rollout.RolloutsFile))
		if r := recs[fmt.Sprintf("test/%d/q2/1", s.Step)]; r.FailureKind != failure.KindInfra {
			t.Errorf("step %d: q2's broken rollout is %q in the rescored rollouts.jsonl, want infra (have %d records)", s.Step, r.FailureKind, len(recs))
		}
	}
}
