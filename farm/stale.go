package farm

import "github.com/mgrpo/mgrpo/rollout"

// staleCount is what the stale policy found in one role's batch.
type staleCount struct {
	// samples counts the samples more than the bound behind, groups the
	// queries holding one, dropped the samples of those groups.
	samples, groups, dropped int
}

// splitStale returns the samples of the queries none of whose samples is
// more than bound versions behind trainer, in their order, and the
// counts. A query's samples go together: the group's advantages were
// normalised over all of them, and its alignment (duplicates, padding)
// refers across them, so a group with a hole would train on advantages
// the step files do not show.
func splitStale(samples []rollout.Sample, trainer, bound int64) ([]rollout.Sample, staleCount) {
	var c staleCount
	stale := map[string]bool{}
	for _, s := range samples {
		if trainer-s.PolicyVersion > bound {
			c.samples++
			if !stale[s.QueryID] {
				stale[s.QueryID] = true
				c.groups++
			}
		}
	}
	if c.groups == 0 {
		return samples, c
	}
	kept := make([]rollout.Sample, 0, len(samples))
	for _, s := range samples {
		if stale[s.QueryID] {
			c.dropped++
			continue
		}
		kept = append(kept, s)
	}
	return kept, c
}

// oldestVersion returns the oldest policy version of samples, or def when
// there are none.
func oldestVersion(samples []rollout.Sample, def int64) int64 {
	for i, s := range samples {
		if i == 0 || s.PolicyVersion < def {
			def = s.PolicyVersion
		}
	}
	return def
}
