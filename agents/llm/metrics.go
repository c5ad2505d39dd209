package llm

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the client's Prometheus collectors, labelled by role and
// endpoint (credentials redacted). One Metrics may be shared by the clients
// of every role; register it once with Register.
type Metrics struct {
	requests         *prometheus.CounterVec
	retries          *prometheus.CounterVec
	failures         *prometheus.CounterVec
	latency          *prometheus.HistogramVec
	promptTokens     *prometheus.CounterVec
	completionTokens *prometheus.CounterVec
	drifts           *prometheus.CounterVec
	ejections        *prometheus.CounterVec
}

// Failure classes used as the "class" label of mgrpo_llm_failures_total.
const (
	ClassConnection = "connection"
	ClassTimeout    = "timeout"
	ClassStatus429  = "status_429"
	ClassStatus5xx  = "status_5xx"
	ClassStatus4xx  = "status_4xx"
	ClassDecode     = "decode"
	ClassAbort      = "abort"
	ClassCanceled   = "canceled"
)

// NewMetrics returns unregistered collectors.
func NewMetrics() *Metrics {
	re := []string{"role", "endpoint"}
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_requests_total", Help: "Completed LLM calls (successful or not).",
		}, append(re, "outcome")),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_retries_total", Help: "HTTP attempts beyond the first of each call.",
		}, re),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_failures_total", Help: "Failed HTTP attempts by class.",
		}, append(re, "class")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mgrpo_llm_call_duration_seconds", Help: "Wall time of successful calls, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}, re),
		promptTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_prompt_tokens_total", Help: "Prompt tokens of successful calls.",
		}, re),
		completionTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_completion_tokens_total", Help: "Completion tokens of successful calls.",
		}, re),
		drifts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_drift_events_total", Help: "Turns whose prompt did not extend the previous prompt and completion.",
		}, []string{"role"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_endpoint_ejections_total", Help: "Endpoints taken out of rotation after consecutive failures.",
		}, re),
	}
}

// Register registers every collector with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.retries, m.failures, m.latency, m.promptTokens, m.completionTokens, m.drifts, m.ejections} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// The observe helpers accept a nil receiver so a client without metrics
// needs no checks at the call sites.

func (m *Metrics) success(role, ep string, t *Turn) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(role, ep, "ok").Inc()
	m.latency.WithLabelValues(role, ep).Observe(t.Latency.Seconds())
	m.promptTokens.WithLabelValues(role, ep).Add(float64(len(t.PromptIDs)))
	m.completionTokens.WithLabelValues(role, ep).Add(float64(len(t.CompletionIDs)))
	if t.Attempts > 1 {
		m.retries.WithLabelValues(role, ep).Add(float64(t.Attempts - 1))
	}
}

func (m *Metrics) giveUp(role, ep string, attempts int) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(role, ep, "error").Inc()
	if attempts > 1 {
		m.retries.WithLabelValues(role, ep).Add(float64(attempts - 1))
	}
}

func (m *Metrics) failure(role, ep, class string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(role, ep, class).Inc()
}

func (m *Metrics) ejected(role, ep string) {
	if m == nil {
		return
	}
	m.ejections.WithLabelValues(role, ep).Inc()
}

// Drift counts n drift events for role.
func (m *Metrics) Drift(role string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.drifts.WithLabelValues(role).Add(float64(n))
}
