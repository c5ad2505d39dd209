package farm

import (
	"math"
	"math/rand/v2"

	"github.com/mgrpo/mgrpo/rollout"
)

// alignRNG is the generator ProcessGroup aligns a query with.
func alignRNG(seed uint64, step int, query string) *rand.Rand {
	return rand.New(rand.NewPCG(rollout.AlignSeed(seed, step, query)))
}

// rescoreTally gathers what a rescored step's summary recomputes: the
// reward-derived fields; the rest of the recorded summary (tokens, tools,
// timings of the run) stays as it was.
type rescoreTally struct {
	rollouts, subScored              int
	mainSum, subSum, correctSum      float64
	scoreErrors, expertErrors, judge int
	counters                         rollout.StepCounters
	plannerSamples, executorSamples  int
	stats                            []rollout.QueryStats
}

// add counts one rescored record.
func (t *rescoreTally) add(r *rollout.RolloutRecord) {
	t.rollouts++
	t.mainSum += r.Scores.Main
	t.correctSum += r.Scores.Correct
	if r.Scores.ScoreError != "" {
		t.scoreErrors++
	}
	if v := r.Scores.Verdict; v != nil {
		t.judge += v.JudgeCalls
	}
	for _, s := range r.Scores.Subs {
		if s.ExpertRaw != "" {
			t.judge++
		}
		if s.ExpertError != "" {
			t.expertErrors++
		}
		t.subSum += s.Reward
		t.subScored++
	}
}

// addExcluded counts one rescored record of an excluded group: its judge
// answers and errors count, its rewards in no mean (as summaryAcc does).
func (t *rescoreTally) addExcluded(r *rollout.RolloutRecord) {
	if r.Scores.ScoreError != "" {
		t.scoreErrors++
	}
	if v := r.Scores.Verdict; v != nil {
		t.judge += v.JudgeCalls
	}
	for _, s := range r.Scores.Subs {
		if s.ExpertRaw != "" {
			t.judge++
		}
		if s.ExpertError != "" {
			t.expertErrors++
		}
	}
}

// group counts one processed group and its samples.
func (t *rescoreTally) group(res rollout.GroupResult, planner, executor int) {
	t.counters.Add(res)
	t.plannerSamples += planner
	t.executorSamples += executor
	t.stats = append(t.stats, res.Stats)
}

// summary writes the tally into sum.
func (t *rescoreTally) summary(sum *rollout.StepSummary, sub bool, dbar int) {
	sum.Counters = t.counters
	sum.PlannerSamples, sum.ExecutorSamples = t.plannerSamples, t.executorSamples
	sum.ScoreErrors, sum.ExpertErrors, sum.Usage.JudgeCalls = t.scoreErrors, t.expertErrors, t.judge
	sum.MeanMainReward, sum.Accuracy, sum.MeanSubReward = 0, 0, 0
	if n := float64(t.rollouts); n > 0 {
		sum.MeanMainReward = t.mainSum / n
		sum.Accuracy = t.correctSum / n
	}
	if t.subScored > 0 {
		sum.MeanSubReward = t.subSum / float64(t.subScored)
	}
	sum.DBar = 0
	sum.MainZeroVarianceFraction, sum.SubZeroVarianceFraction = 0, 0
	if sub {
		sum.DBar = dbar
	}
	if q := float64(t.counters.Queries); q > 0 {
		sum.MainZeroVarianceFraction = float64(t.counters.MainZeroVariance) / q
		if sub {
			sum.SubZeroVarianceFraction = float64(t.counters.SubZeroVariance) / q
		}
	}
}

// changeTally compares the recorded and the rescored groups of a step.
type changeTally struct {
	main, sub roleTally
}

type roleTally struct {
	sign, became, left, n int
	absDelta              float64
}

// signTolerance is below any advantage a non-zero-variance group gives
// (|R − μ|/(σ + ε) of distinct rewards) and above the rounding of R − μ
// for R = μ.
const signTolerance = 1e-9

func sign(v float64) int {
	switch {
	case v > signTolerance:
		return 1
	case v < -signTolerance:
		return -1
	}
	return 0
}

// add compares one group: the main advantages rollout by rollout, the
// sub advantages trajectory by trajectory (a trajectory's advantage is
// that of every entry it fills, so the alignments need not match).
func (c *changeTally) add(was, now rollout.GroupResult) {
	signed := false
	for k := range now.Main {
		if k >= len(was.Main) {
			break
		}
		a, b := was.Main[k].Advantage, now.Main[k].Advantage
		c.main.absDelta += math.Abs(b - a)
		c.main.n++
		signed = signed || sign(a) != sign(b)
	}
	c.main.count(signed, was.MainZeroVariance, now.MainZeroVariance)
	if now.Mode != rollout.ModeMGRPO {
		return
	}
	old := map[rollout.SubRef]float64{}
	for _, e := range was.Sub {
		if !e.Padding {
			old[e.Source] = e.Advantage
		}
	}
	signed = false
	seen := map[rollout.SubRef]bool{}
	for _, e := range now.Sub {
		a, ok := old[e.Source]
		if e.Padding || !ok || seen[e.Source] {
			continue
		}
		seen[e.Source] = true
		c.sub.absDelta += math.Abs(e.Advantage - a)
		c.sub.n++
		signed = signed || sign(a) != sign(e.Advantage)
	}
	c.sub.count(signed, was.SubZeroVariance, now.SubZeroVariance)
}

func (r *roleTally) count(signed, was, now bool) {
	if signed {
		r.sign++
	}
	if now && !was {
		r.became++
	}
	if was && !now {
		r.left++
	}
}

func (r roleTally) changes() RoleChanges {
	out := RoleChanges{SignChanged: r.sign, BecameZeroVariance: r.became, LeftZeroVariance: r.left, Compared: r.n}
	if r.n > 0 {
		out.MeanAbsDelta = r.absDelta / float64(r.n)
	}
	return out
}

// roles returns the changes by role of a run in mode.
func (c *changeTally) roles(mode rollout.Mode) map[rollout.Role]RoleChanges {
	out := map[rollout.Role]RoleChanges{rollout.RolePlanner: c.main.changes()}
	if mode == rollout.ModeMGRPO {
		out[rollout.RoleExecutor] = c.sub.changes()
	}
	return out
}
