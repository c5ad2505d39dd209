package view

import (
	"sort"
	"strings"

	"github.com/mgrpo/mgrpo/rollout"
)

// trainingRow is what the pages show of one role's optimizer step after a
// step of mgrpo train.
type trainingRow struct {
	Role string
	rollout.RoleTraining
	// LossPerToken is the trainer's summed loss over the batch's loss
	// tokens (or its mean loss when it reports one); HasLoss says either
	// was there.
	LossPerToken float64
	HasLoss      bool
	Metrics      []metricRow
	// Checks counts the failed checks among Metrics.
	Checks int
}

// metricRow is one trainer metric. Check marks a metric that says
// whether trainer and sampler agree; Bad one of those that says they do
// not.
type metricRow struct {
	Name       string
	Value      float64
	Check, Bad bool
}

// checkMetrics are the trainer's consistency checks: each is 0 when the
// trainer scored the tokens as the sampler did and the advantages order
// the samples as their rewards do (the sim trainer reports them; other
// trainers may not).
var checkMetrics = map[string]bool{
	"unmatched_tokens:sum":           true,
	"advantage_order_violations:sum": true,
}

// lossPerToken returns rec's mean loss per token when the trainer
// reported a summed loss with the batch's loss tokens, or a mean loss.
func lossPerToken(rec rollout.RoleTraining) (float64, bool) {
	if sum, ok := rec.Metrics["loss:sum"]; ok && rec.LossTokens > 0 {
		return sum / float64(rec.LossTokens), true
	}
	if m, ok := rec.Metrics["loss:mean"]; ok {
		return m, true
	}
	if l, ok := rec.Metrics["loss"]; ok {
		return l, true
	}
	return 0, false
}

// trainingRows returns a step's training records, the planner's first.
func trainingRows(s *rollout.StepSummary) []trainingRow {
	if s == nil || len(s.Training) == 0 {
		return nil
	}
	roles := make([]string, 0, len(s.Training))
	for role := range s.Training {
		roles = append(roles, role)
	}
	sort.Slice(roles, func(i, j int) bool {
		if (roles[i] == string(rollout.RolePlanner)) != (roles[j] == string(rollout.RolePlanner)) {
			return roles[i] == string(rollout.RolePlanner)
		}
		return roles[i] < roles[j]
	})
	var out []trainingRow
	for _, role := range roles {
		rec := s.Training[role]
		row := trainingRow{Role: role, RoleTraining: rec}
		row.LossPerToken, row.HasLoss = lossPerToken(rec)
		for name, v := range rec.Metrics {
			check := checkMetrics[name] || strings.HasPrefix(name, "logprob_diff_abs")
			row.Metrics = append(row.Metrics, metricRow{Name: name, Value: v, Check: check, Bad: checkMetrics[name] && v != 0})
		}
		sort.Slice(row.Metrics, func(i, j int) bool { return row.Metrics[i].Name < row.Metrics[j].Name })
		row.Checks = checksFailed([]trainingRow{row})
		out = append(out, row)
	}
	return out
}

// checksFailed counts the trainer checks of a step that are not 0.
func checksFailed(rows []trainingRow) int {
	n := 0
	for _, r := range rows {
		for _, m := range r.Metrics {
			if m.Bad {
				n++
			}
		}
	}
	return n
}
