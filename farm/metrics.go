package farm

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// Metrics are the farm's Prometheus collectors: rollouts finished and in
// flight, step phases, sequence-assembly drift and failures, the policy
// version each step sampled with, and the last step's rewards. The model
// client (llm.Metrics) and the tools (tools.Metrics) have collectors of
// their own; a run registers all three on one registry.
type Metrics struct {
	rollouts      *prometheus.CounterVec
	inFlight      prometheus.Gauge
	steps         prometheus.Counter
	phase         *prometheus.HistogramVec
	drifts        prometheus.Counter
	retries       *prometheus.CounterVec
	excluded      prometheus.Counter
	policyVersion prometheus.Gauge
	mainReward    prometheus.Gauge
	accuracy      prometheus.Gauge
	limits        *limitCollector
}

// The phases of a step, the "phase" label of
// mgrpo_farm_step_phase_duration_seconds.
const (
	PhaseRollout  = "rollout"  // scheduling to the last rollout's result
	PhaseAssemble = "assemble" // rewards, advantages, alignment, samples
	PhaseWrite    = "write"    // step files and summary
)

// NewMetrics creates the farm's collectors and registers them with reg
// (nil: counted, not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		limits: &limitCollector{desc: prometheus.NewDesc("mgrpo_farm_concurrency_limit",
			"Requests a model role may have in flight at its engines now, under --concurrency auto (absent for a fixed concurrency).", []string{"role"}, nil)},
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_farm_rollouts_total", Help: "Rollouts finished, by result (ok or failed) and failure class (infra, model; empty for none): a model failure is scored 0 and trained, an infra one retried and, still infra, its group excluded (--on-infra-failure).",
		}, []string{"result", "class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_farm_rollout_retries_total", Help: "Rollouts run again after an infra failure, by the failure's cause.",
		}, []string{"cause"}),
		excluded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mgrpo_farm_excluded_groups_total", Help: "Groups kept out of a step's batches because a rollout stayed an infra failure after its retries.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mgrpo_farm_rollouts_in_flight", Help: "Rollouts started and not yet finished.",
		}),
		steps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mgrpo_farm_steps_total", Help: "Steps whose files were written.",
		}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mgrpo_farm_step_phase_duration_seconds", Help: "Wall time of each phase of a step (rollout, assemble, write).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 14),
		}, []string{"phase"}),
		drifts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mgrpo_farm_drift_events_total", Help: "Chat-template drift events: trajectories split into several samples.",
		}),
		policyVersion: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mgrpo_farm_policy_version", Help: "Policy version the current step's rollouts are sampled with.",
		}),
		mainReward: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mgrpo_farm_step_mean_main_reward", Help: "Mean R_M of the last written step.",
		}),
		accuracy: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mgrpo_farm_step_accuracy", Help: "Mean r_correct of the last written step.",
		}),
	}
	// Both results exist from the start, so a rate over them is defined
	// before the first failure.
	m.rollouts.WithLabelValues("ok", "")
	m.rollouts.WithLabelValues("failed", "")
	if reg != nil {
		reg.MustRegister(m.rollouts, m.retries, m.excluded, m.inFlight, m.steps, m.phase, m.drifts, m.policyVersion, m.mainReward, m.accuracy, m.limits)
	}
	return m
}

// started counts a rollout that began.
func (m *Metrics) started() {
	if m != nil {
		m.inFlight.Inc()
	}
}

// finished counts a rollout that ended, failed or not, with its failure
// class (kind: infra, model or none).
func (m *Metrics) finished(failed bool, kind failure.Kind) {
	if m == nil {
		return
	}
	m.inFlight.Dec()
	result := "ok"
	if failed {
		result = "failed"
	}
	m.rollouts.WithLabelValues(result, string(kind)).Inc()
}

// retried counts a rollout run again after an infra failure of cause.
func (m *Metrics) retried(cause string) {
	if m != nil {
		m.retries.WithLabelValues(cause).Inc()
	}
}

// excludedGroups counts groups a written step kept out of its batches.
func (m *Metrics) excludedGroups(n int) {
	if m != nil {
		m.excluded.Add(float64(n))
	}
}

// stepStarted records the policy version a step samples with.
func (m *Metrics) stepStarted(version int64) {
	if m != nil {
		m.policyVersion.Set(float64(version))
	}
}

// phaseDone observes how long a phase of a step took.
func (m *Metrics) phaseDone(phase string, d time.Duration) {
	if m != nil {
		m.phase.WithLabelValues(phase).Observe(d.Seconds())
	}
}

// stepWritten records a written step's figures.
func (m *Metrics) stepWritten(drifts int, meanMain, accuracy float64) {
	if m == nil {
		return
	}
	m.steps.Inc()
	m.drifts.Add(float64(drifts))
	m.mainReward.Set(meanMain)
	m.accuracy.Set(accuracy)
}
