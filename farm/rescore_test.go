package farm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/rollout/rollouttest"
)

// knownRollout says how rollout k of a known group goes: whether the
// planner's format is valid and its answer right, and the expert score
// its one executor gets.
type knownRollout struct {
	formatOK, correct bool
	expert            float64
}

// knownGroups are built so that the rewards α = (0, 1), β = (0.1, 0.6,
// 0.3) change known groups, against the defaults α = (0.1, 0.9), β =
// (0.1, 0.4, 0.5):
//   - q0: main (1, 0.1) → (1, 0): signs kept; sub (0.5, 0.6) → (0.7, 0.4):
//     signs flip.
//   - q1: main (0.1, 0.1) → (0, 0): zero variance before and after; sub
//     (0.6, 0.1) → (0.4, 0.1): signs kept.
//   - q2: main (1, 0) → (1, 0); sub (0.5, 0.1) → (0.7, 0.1): signs kept.
//   - q3: main (0.1, 0) → (0, 0): becomes zero-variance (signs + − → 0 0);
//     sub (0.6, 0.6) → (0.4, 0.4): zero variance before and after.
var knownGroups = [][]knownRollout{
	{{true, true, 0}, {true, false, 1}},
	{{true, false, 1}, {true, false, 0}},
	{{true, true, 0}, {false, false, 0}},
	{{true, false, 1}, {false, false, 1}},
}

// taskJudge rates an executor report by its subtask.
type taskJudge map[string]float64

func (j taskJudge) Rate(_ context.Context, subtask, _ string) (float64, string, error) {
	return j[subtask], fmt.Sprintf("SCORE: %v", j[subtask]*10), nil
}

// knownRun writes the one-step run of knownGroups (d = 1 everywhere, or
// d executors per rollout with dbar) into a new directory.
func knownRun(t *testing.T, d, dbar int, drop bool) (string, Config) {
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
		r := scriptedRollout(tk, task, d, answer)
		if !g.formatOK {
			r.Planner.FormatOK = false
		}
		for i, e := range r.Executors {
			e.Task = fmt.Sprintf("%s/%d/%d", tk.ID, task.K, i)
			judge[e.Task] = g.expert
		}
		return r
	})
	cfg := testFarmConfig(dir, runner)
	cfg.BatchSize, cfg.GroupSize, cfg.DBar, cfg.Concurrency = len(knownGroups), 2, rollout.DBarSpec{Fixed: dbar}, 1
	cfg.Expert, cfg.DropZeroVariance = judge, drop
	mustRunFarm(t, cfg, tasks)
	return dir, cfg
}

// rescoreConfig is the rescore of a knownRun with its own settings.
func rescoreConfig(from, to string, c Config) RescoreConfig {
	return RescoreConfig{From: from, Run: c.Run, Seed: c.Seed, Mode: c.Mode, GroupSize: c.GroupSize,
		DBar: c.DBar, DropZeroVariance: c.DropZeroVariance, WasDropZeroVariance: c.DropZeroVariance, Weights: c.Weights, ExpertFallback: rollout.DefaultExpertFallback, KeepExpert: true,
		Sink: rollout.DirSink{Dir: to}}
}

func TestRescoreUnchangedSettingsKeepsEveryStepFile(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop-zero-variance=%v", drop), func(t *testing.T) { testRescoreUnchanged(t, drop) })
	}
}

// testRescoreUnchanged rescores a known run with its own settings; with
// drop, the run left its zero-variance groups' samples out, which the
// rescore leaves out again.
func testRescoreUnchanged(t *testing.T, drop bool) {
	from, c := knownRun(t, 2, 2, drop)
	to := filepath.Join(t.TempDir(), "new")
	steps, err := Rescore(context.Background(), rescoreConfig(from, to, c))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{rollout.PlannerFile, rollout.ExecutorFile, rollout.StatsFile, rollout.RolloutsFile} {
		a := mustReadFile(t, filepath.Join(rollout.StepDir(from, 1), name))
		b := mustReadFile(t, filepath.Join(rollout.StepDir(to, 1), name))
		if string(a) != string(b) {
			t.Errorf("%s differs after a rescore with unchanged settings", name)
		}
	}
	for role, ch := range steps[0].Roles {
		if ch.SignChanged != 0 || ch.BecameZeroVariance != 0 || ch.MeanAbsDelta != 0 {
			t.Errorf("%s: changes %+v, want none", role, ch)
		}
	}
}

func TestRescoreCountsTheKnownGroupsAndFollowsTheReference(t *testing.T) {
	from, c := knownRun(t, 1, 1, false)
	to := filepath.Join(t.TempDir(), "new")
	rc := rescoreConfig(from, to, c)
	rc.Weights = rollout.RewardWeights{Alpha1: 0, Alpha2: 1, Beta1: 0.1, Beta2: 0.6, Beta3: 0.3}
	steps, err := Rescore(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	got := steps[0].Roles
	want := map[rollout.Role]RoleChanges{
		rollout.RolePlanner:  {SignChanged: 1, BecameZeroVariance: 1, Compared: 8},
		rollout.RoleExecutor: {SignChanged: 1, Compared: 8},
	}
	for role, w := range want {
		g := got[role]
		g.MeanAbsDelta = 0
		if g != w {
			t.Errorf("%s: changes %+v, want %+v", role, g, w)
		}
	}
	// The new files follow the reference math on the new rewards.
	planner, executor, stats := mustReadStep(t, to, 1)
	for q, g := range knownGroups {
		st := stats[q]
		var main, sub []float64
		for _, r := range g {
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
		for k := range g {
			if math.Abs(st.MainRewards[k]-main[k]) > 1e-12 || math.Abs(st.SubRewards[k]-sub[k]) > 1e-12 {
				t.Errorf("q%d rollout %d: rewards %v/%v, want %v/%v", q, k, st.MainRewards[k], st.SubRewards[k], main[k], sub[k])
			}
		}
		refMain, refSub := rollouttest.ReferenceAdvantages(main), rollouttest.ReferenceAdvantages(sub)
		for _, s := range planner {
			if s.QueryID == st.QueryID && math.Abs(s.Advantage-refMain[s.Rollout]) > 1e-9 {
				t.Errorf("q%d rollout %d: planner advantage %v, reference %v", q, s.Rollout, s.Advantage, refMain[s.Rollout])
			}
		}
		for _, s := range executor {
			if s.QueryID == st.QueryID && math.Abs(s.Advantage-refSub[s.Rollout]) > 1e-9 {
				t.Errorf("q%d rollout %d: executor advantage %v, reference %v", q, s.Rollout, s.Advantage, refSub[s.Rollout])
			}
		}
	}
}

func TestRescoreRefusesAGroupTheRunDropped(t *testing.T) {
	// q1's planners had equal rewards and were left out; new weights
	// that give them different rewards need their tokens.
	from, c := knownRun(t, 1, 1, true)
	rc := rescoreConfig(from, filepath.Join(t.TempDir(), "new"), c)
	rc.DropZeroVariance = false
	_, err := Rescore(context.Background(), rc)
	if !errors.Is(err, ErrNotRescorable) || !strings.Contains(err.Error(), `query "q1"`) {
		t.Fatalf("err %v, want ErrNotRescorable naming q1", err)
	}
	if strings.Contains(err.Error(), "--dbar values") {
		t.Errorf("a planner the run dropped is not a matter of d̄, but the refusal %q lists d̄ values", err)
	}
}

func TestRescoreRefusesATrajectoryTheRunDropped(t *testing.T) {
	// d = 2 aligned to d̄ = 1: one executor of every rollout was dropped.
	from, c := knownRun(t, 2, 1, false)
	to := filepath.Join(t.TempDir(), "new")
	rc := rescoreConfig(from, to, c)
	rc.DBar = rollout.DBarSpec{Fixed: 2}
	_, err := Rescore(context.Background(), rc)
	if !errors.Is(err, ErrNotRescorable) {
		t.Fatalf("err %v, want ErrNotRescorable", err)
	}
	if _, serr := os.Stat(to); !os.IsNotExist(serr) {
		t.Errorf("%s written despite the error %v", to, err)
	}
	// The refusal lists the values that work: d̄ = 1 (the run's); 2,
	// every trajectory, needs the dropped ones.
	if !strings.Contains(err.Error(), "--dbar values this run allows: 1 (") {
		t.Errorf("refusal %q does not list the d̄ values the run allows (1)", err)
	}
	// A d̄ the run's alignment kept is fine.
	rc.DBar = rollout.DBarSpec{Fixed: 1}
	if _, err := Rescore(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
}

func TestRescoreRefusesAMalformedRun(t *testing.T) {
	from, c := knownRun(t, 1, 1, false)
	path := filepath.Join(rollout.StepDir(from, 1), rollout.RolloutsFile)
	if err := os.WriteFile(path, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "new")
	if _, err := Rescore(context.Background(), rescoreConfig(from, to, c)); !errors.Is(err, ErrNotRescorable) {
		t.Fatalf("err %v, want ErrNotRescorable", err)
	}
	if _, err := Rescore(context.Background(), rescoreConfig(t.TempDir(), to, c)); !errors.Is(err, ErrNotRescorable) {
		t.Fatalf("a directory without summary.jsonl: err %v, want ErrNotRescorable", err)
	}
	if _, serr := os.Stat(to); !os.IsNotExist(serr) {
		t.Errorf("%s written", to)
	}
}
