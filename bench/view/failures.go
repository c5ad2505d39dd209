package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/rollout"
)

// failureCount is one non-zero failure count of a step's summary, as the
// step page shows it: what is counted, the number and, for counts kept by
// cause, the causes with theirs.
type failureCount struct {
	Name, Label string
	N           int
	ByCause     string
}

// failureCounts returns the step's non-zero failure counts (see the class
// table of docs/architecture.md), none without a summary or failures: a
// reader sees at once whether the step's rewards met outages, how many
// runs were retried and how many groups left the batch.
func failureCounts(s *rollout.StepSummary) []failureCount {
	if s == nil {
		return nil
	}
	var out []failureCount
	add := func(name, label string, n int, by map[string]int) {
		if n == 0 {
			return
		}
		out = append(out, failureCount{Name: name, Label: label, N: n, ByCause: byCause(by)})
	}
	add("infra_failures", "infra failures", total(s.InfraFailures), s.InfraFailures)
	add("rollout_retries", "retries", s.RolloutRetries, nil)
	add("infra_rollouts", "still infra", s.InfraRollouts, nil)
	add("excluded_groups", "excluded groups", s.ExcludedGroups, nil)
	add("model_failures", "model failures", total(s.ModelFailures), s.ModelFailures)
	add("tool_outages", "tool outages", s.ToolOutages, nil)
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// byCause lists m as "cause n, …" in cause order.
func byCause(m map[string]int) string {
	var b strings.Builder
	for i, c := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", c, m[c])
	}
	return b.String()
}
