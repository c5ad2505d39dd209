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
	if w.ssrfWarned || sum.VisitCalls < minVisitsForWarning || 2*sum.VisitsRefused <= sum.VisitCalls {
		return
	}
	w.ssrfWarned = true
	w.log.Warn("the SSRF guard refused most page visits; allow the pages' host with --allow-host HOST[:PORT] (search.allow_hosts) if it is yours",
		"step", sum.Step, "visits_refused", sum.VisitsRefused, "visit_calls", sum.VisitCalls)
}
