package farm

import (
	"log/slog"

	"github.com/mgrpo/mgrpo/rollout"
)

// warnings says, once per run each, what makes a run's data less useful
// than its user probably meant, with the counts behind it.
type warnings struct {
	log        *slog.Logger
	ssrfWarned bool
}

// minVisitsForWarning keeps the SSRF warning from firing on a handful of
// visits, where one refusal would be "most".
const minVisitsForWarning = 4

// atStart warns about the configuration: a group of one rollout, whose
// advantage is always zero, and steps that use more questions than the task
// list holds, so questions repeat.
func (w *warnings) atStart(cfg Config, tasks int) {
	if cfg.GroupSize == 1 {
		w.log.Warn("group_size 1: every group-relative advantage is 0, so the samples carry no learning signal; use --group-size 2 or more (the paper uses 8)",
			"group_size", cfg.GroupSize)
	}
	if used := cfg.Steps * cfg.BatchSize; used > tasks {
		w.log.Warn("tasks wrap around: the run asks more questions than the task list holds, so questions repeat in later steps",
			"steps", cfg.Steps, "batch_size", cfg.BatchSize, "questions_asked", used, "tasks", tasks,
			"first_repeat_step", tasks/cfg.BatchSize+1)
	}
}

// afterStep warns, once, when the SSRF guard refused most of a step's page
// visits: the agents then learn from error observations, which usually
// means the pages' host needs --allow-host.
func (w *warnings) afterStep(sum rollout.StepSummary) {
	w.infra(sum)
	if w.ssrfWarned || sum.VisitCalls < minVisitsForWarning || 2*sum.VisitsRefused <= sum.VisitCalls {
		return
	}
	w.ssrfWarned = true
	w.log.Warn("the SSRF guard refused most page visits; allow the pages' host with --allow-host HOST[:PORT] (search.allow_hosts) if it is yours",
		"step", sum.Step, "visits_refused", sum.VisitsRefused, "visit_calls", sum.VisitCalls)
}

// infraWarnFraction is the share of a step's rollouts meeting infra
// failures above which the run warns.
const infraWarnFraction = 0.1

// infra warns when more than infraWarnFraction of a step's rollouts met an
// infra failure (retried or not), naming the endpoint most of them named:
// the cluster, not the policy, is then shaping the step.
func (w *warnings) infra(sum rollout.StepSummary) {
	if sum.Rollouts == 0 || float64(sum.InfraAffected) <= infraWarnFraction*float64(sum.Rollouts) {
		return
	}
	endpoint := sum.InfraEndpoint
	if endpoint == "" {
		endpoint = "(none named)"
	}
	w.log.Warn("more than 10% of the step's rollouts met infrastructure failures; check the endpoint",
		"step", sum.Step, "rollouts_affected", sum.InfraAffected, "rollouts", sum.Rollouts, "endpoint", endpoint,
		"infra_failures", sum.InfraFailures, "rollout_retries", sum.RolloutRetries, "excluded_groups", sum.ExcludedGroups)
}
