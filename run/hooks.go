package run

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/rollout"
)

// Hooks are what the caller of a job sees of it while it runs; every field
// is optional. The CLI fills them with its logger, its metrics registry,
// its progress bar and its step table.
type Hooks struct {
	// Logger receives the job's log lines (nil: discard).
	Logger *slog.Logger
	// Registerer, when set, receives the job's Prometheus collectors
	// (mgrpo_farm_*, mgrpo_llm_*, mgrpo_tool_*).
	Registerer prometheus.Registerer
	// OnStart is called once the run is set up (configuration checked,
	// endpoints answered, store open), just before its first rollout.
	OnStart func()
	// OnProgress is called after every finished rollout, one call at a
	// time; it should return quickly.
	OnProgress func(farm.Progress)
	// OnStep is called with each step's summary once the step is written.
	OnStep func(rollout.StepSummary)
}

// logger returns the hooks' logger, or one that discards.
func (h Hooks) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}
