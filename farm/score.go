package farm

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/rollout"
)

// Scoring holds what scoring a rollout needs: the mode, the reward weights,
// the answer scorer and the expert judge (or the fallback used without
// one).
type Scoring struct {
	Mode           rollout.Mode
	Weights        rollout.RewardWeights
	Scorer         rollout.Scorer
	Expert         rollout.ExpertJudge
	ExpertFallback rollout.ExpertFallback
}

// Score fills res.Scores from res.Tree, res.Error and the sequence results
// (which must already be set). It never fails: a scorer or judge error is
// recorded in the scores and counts as 0. Executors are judged
// concurrently.
func (s Scoring) Score(ctx context.Context, t Task, res *RolloutResult) {
	tree := res.Tree
	sc := rollout.RolloutScores{}
	p := tree.Planner
	sc.FormatReason = formatReason(res.Error, p, res.Planner.SequenceError)
	sc.FormatOK = sc.FormatReason == ""
	if sc.FormatOK && s.Scorer != nil {
		v, err := s.Scorer.Score(ctx, t.Question, tree.Answer, t.Answer)
		if err != nil {
			sc.ScoreError = fmt.Sprintf("score answer: %v", err)
		} else {
			sc.Verdict = &v
			sc.Correct = rollout.ClampUnit(v.Correct)
		}
	}
	sc.Main = s.Weights.MainReward(sc.FormatOK, sc.Correct)

	sc.Subs = make([]rollout.SubScore, len(tree.Executors))
	for i, e := range tree.Executors {
		seqErr := "no sequence result for this executor"
		if i < len(res.Executors) {
			seqErr = res.Executors[i].SequenceError
		}
		sc.Subs[i].FormatReason = formatReason("", e, seqErr)
		sc.Subs[i].FormatOK = sc.Subs[i].FormatReason == ""
	}
	if s.Mode.TrainsExecutor() {
		var wg sync.WaitGroup
		for i, e := range tree.Executors {
			wg.Go(func() {
				sub := &sc.Subs[i]
				if !sub.FormatOK {
					// R_S is 0 whatever the judge says; do not spend a call.
					return
				}
				var task, report string
				if e != nil {
					task, report = e.Task, e.Final
				}
				score, raw, err := rollout.ExpertScore(ctx, s.Expert, s.ExpertFallback, task, report, sub.FormatOK, sc.Correct)
				sub.Expert, sub.ExpertRaw = score, raw
				if err != nil {
					sub.ExpertError = err.Error()
				}
				sub.Reward = s.Weights.SubReward(sub.FormatOK, sc.Correct, sub.Expert)
			})
		}
		wg.Wait()
	}
	res.Scores = sc
}

// The reasons of an invalid format, as StepSummary.FormatErrors counts
// them; each FormatReason starts with its reason's text.
var formatReasons = []struct{ class, prefix string }{
	{"rollout_failed", "rollout failed: "},
	{"no_trajectory", "no trajectory"},
	{"trajectory_error", "trajectory error: "},
	{"format_errors", "format errors: "},
	{"judged_invalid", "the agent judged its format invalid"},
	{"sequence_assembly", "sequence assembly: "},
}

// formatReason says why a trajectory's format counts as invalid for the
// reward, or returns "" when it is valid: the rollout failed (rolloutErr),
// there is no trajectory, the trajectory ended with an error or format
// errors (the agents' verdict), or its turns formed no sequences.
func formatReason(rolloutErr string, t *agents.Trajectory, sequenceErr string) string {
	switch {
	case rolloutErr != "":
		return formatReasons[0].prefix + rolloutErr
	case t == nil:
		return formatReasons[1].prefix
	case t.Error != "":
		return formatReasons[2].prefix + t.Error
	case len(t.FormatErrors) > 0:
		return formatReasons[3].prefix + strings.Join(t.FormatErrors, "; ")
	case !t.FormatOK:
		return formatReasons[4].prefix
	case sequenceErr != "":
		return formatReasons[5].prefix + sequenceErr
	}
	return ""
}

// formatClass returns the reason class of a FormatReason ("" for none).
func formatClass(reason string) string {
	if reason == "" {
		return ""
	}
	for _, r := range formatReasons {
		if strings.HasPrefix(reason, r.prefix) {
			return r.class
		}
	}
	return "other"
}
