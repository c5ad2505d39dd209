package farm

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/agents/replay"
)

// ReplayMiss is a request the recording did not hold, located in the run.
type ReplayMiss struct {
	replay.Miss
	// Step, Query and Rollout locate the rollout (from Trajectory, and
	// the step that took it).
	Step    int    `json:"step"`
	Query   string `json:"query"`
	Rollout int    `json:"rollout"`
	// Draw is a streamed run's draw the rollout is of (its trajectory
	// names it where a fixed step's names the step); 0 for fixed steps.
	Draw int `json:"draw,omitempty"`
}

// LocateReplayMisses locates the misses of a replay that ran schedule
// (ReadSchedule) in the run: the first miss of each rollout, by step,
// query and rollout.
func LocateReplayMisses(ms []replay.Miss, schedule []ScheduledStep) []ReplayMiss {
	return locateMisses(ms, stepOfRollouts(schedule))
}

// stepOfRollouts returns the step of each rollout of schedule, by the
// rollout's id.
func stepOfRollouts(schedule []ScheduledStep) map[string]int {
	out := map[string]int{}
	for i, s := range schedule {
		for _, u := range s.Units {
			out[u.ID()] = i + 1
		}
	}
	return out
}

// locateMisses keeps the first miss of each rollout, located by step,
// query and rollout (a trajectory key is run/step/query/k/…), in that
// order (rollouts run concurrently: the order they missed in is not the
// run's).
func locateMisses(ms []replay.Miss, steps map[string]int) []ReplayMiss {
	var out []ReplayMiss
	seen := map[string]bool{}
	for _, m := range ms {
		r := ReplayMiss{Miss: m, Rollout: -1}
		parts := strings.Split(m.Trajectory, "/")
		id := strings.Join(parts[:min(4, len(parts))], "/")
		if len(parts) >= 4 {
			r.Step, _ = strconv.Atoi(parts[1])
			r.Query = parts[2]
			r.Rollout, _ = strconv.Atoi(parts[3])
			if s, ok := steps[id]; ok && s != r.Step {
				r.Draw, r.Step = r.Step, s
			}
		}
		if m.Trajectory != "" && seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b ReplayMiss) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Query, b.Query), cmp.Compare(a.Rollout, b.Rollout),
			cmp.Compare(a.Trajectory, b.Trajectory), cmp.Compare(a.Turn, b.Turn))
	})
	return out
}
