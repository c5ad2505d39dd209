package view

import (
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// excludedGroup is a group its step kept out of the batches because a
// rollout stayed an infra failure after its retries: the group has no
// stats.jsonl line, but its rollouts are in rollouts.jsonl. Kind and Cause
// are those of the failure that excluded it, Rollout the rollout that
// failed, Endpoint what the failure named.
type excludedGroup struct {
	Kind, Cause, Rollout, Endpoint string
}

// withExcluded returns the step's queries in the order rollouts.jsonl
// lists them (the step's task order): those of stats, and for each query
// rollouts.jsonl holds without a statistics line (an excluded group) a
// line made of its rollouts' recorded rewards and executor counts. The
// second result names the excluded ones, with what excluded them: the
// summary's excluded entry when it has one, else the group's first infra
// rollout. Without rollouts.jsonl the statistics are returned as they are.
func withExcluded(stats []rollout.QueryStats, sf stepFiles, sum *rollout.StepSummary) ([]rollout.QueryStats, map[string]*excludedGroup) {
	if sf.rollouts == nil || len(sf.rollouts.rollouts) == 0 {
		return stats, nil
	}
	have := make(map[string]int, len(stats))
	for i, qs := range stats {
		have[qs.QueryID] = i
	}
	var fromSummary map[string]rollout.ExcludedGroup
	if sum != nil {
		fromSummary = make(map[string]rollout.ExcludedGroup, len(sum.Excluded))
		for _, e := range sum.Excluded {
			fromSummary[e.QueryID] = e
		}
	}
	var out []rollout.QueryStats
	var excluded map[string]*excludedGroup
	seen := map[string]bool{}
	for i := range sf.rollouts.rollouts {
		m := &sf.rollouts.rollouts[i]
		q := m.Task.QueryID
		if seen[q] {
			continue
		}
		seen[q] = true
		if j, ok := have[q]; ok {
			out = append(out, stats[j])
			continue
		}
		qs := rollout.QueryStats{QueryID: q}
		ex := &excludedGroup{Kind: string(failure.KindInfra)}
		if e, ok := fromSummary[q]; ok {
			ex.Cause, ex.Rollout, ex.Endpoint = e.Cause, e.Rollout, e.Endpoint
		}
		for k := 0; ; k++ {
			lines := sf.rollouts.byRollout[rolloutKey(q, k)]
			if len(lines) == 0 {
				break
			}
			r := &sf.rollouts.rollouts[lines[0]]
			qs.MainRewards = append(qs.MainRewards, r.Scores.Main)
			qs.D = append(qs.D, r.executors())
			if ex.Rollout == "" && r.FailureKind == string(failure.KindInfra) {
				ex.Cause, ex.Rollout = r.FailureCause, r.ID
			}
		}
		if excluded == nil {
			excluded = map[string]*excludedGroup{}
		}
		excluded[q] = ex
		out = append(out, qs)
	}
	// Statistics of queries rollouts.jsonl does not hold (a step file
	// edited by hand) are kept, after the others.
	for _, qs := range stats {
		if !seen[qs.QueryID] {
			out = append(out, qs)
		}
	}
	return out, excluded
}
