package gateway

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's own counters; the calls it forwards are counted
// by the role clients' llm.Metrics.
type Metrics struct {
	decodeFallbacks *prometheus.CounterVec
	// fallbackBy holds decodeFallbacks' counter of each reason.
	fallbackBy map[string]prometheus.Counter
	// calls counts the agents' model calls by API; refused those refused
	// before anything was forwarded.
	calls, refused *prometheus.CounterVec
	// foreign counts foreign planner trajectories, unmatched executor
	// trajectories matching no delegation (foreign.go).
	foreign, unmatched prometheus.Counter
}

// NewMetrics returns unregistered collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		decodeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_gateway_request_decode_fallback_total",
			Help: "Agents' chat requests the gateway's fast decoder left to encoding/json, by reason.",
		}, []string{"reason"}),
		fallbackBy: make(map[string]prometheus.Counter, len(requestFallbackReasons)),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_gateway_calls_total",
			Help: "Agents' model calls to the gateway, by API (chat_completions, completions, responses, messages).",
		}, []string{"api"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_gateway_calls_refused_total",
			Help: "Agents' model calls refused before anything was forwarded (unreadable, or asking what the engine cannot do), by API.",
		}, []string{"api"}),
		foreign: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mgrpo_gateway_foreign_trajectories_total",
			Help: "Conversations under a rollout's planner URL that were not its planner's (a second planner conversation, a first call without the task): answered, never trained.",
		}),
		unmatched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mgrpo_gateway_unmatched_executors_total",
			Help: "Executor trajectories whose task matches no delegation of their rollout's planner.",
		}),
	}
	for _, a := range apis {
		m.calls.WithLabelValues(a)
		m.refused.WithLabelValues(a)
	}
	// Every reason is exported from the start, at 0.
	for _, r := range requestFallbackReasons {
		m.fallbackBy[r] = m.decodeFallbacks.WithLabelValues(r)
	}
	return m
}

// Register registers every collector with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.decodeFallbacks, m.calls, m.refused, m.foreign, m.unmatched} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// fallback counts a request body left to encoding/json for reason; m may
// be nil.
func (m *Metrics) fallback(reason string) {
	if m != nil {
		m.fallbackBy[reason].Inc()
	}
}

// The APIs a call came in through, as metrics label them.
const (
	apiChat        = "chat_completions"
	apiCompletions = "completions"
	apiResponses   = "responses"
	apiMessages    = "messages"
)

// apis are every API label, exported from the start.
var apis = []string{apiChat, apiCompletions, apiResponses, apiMessages}

// called counts an agent's model call through api; m may be nil.
func (m *Metrics) called(api string) {
	if m != nil {
		m.calls.WithLabelValues(api).Inc()
	}
}

// refusedCall counts a call through api refused before anything was
// forwarded (unreadable, or asking for what the engine cannot do); m may
// be nil.
func (m *Metrics) refusedCall(api string) {
	if m != nil {
		m.refused.WithLabelValues(api).Inc()
	}
}

// misuse counts a rollout's foreign and unmatched trajectories; m may be
// nil.
func (m *Metrics) misuse(foreign, unmatched int) {
	if m != nil {
		m.foreign.Add(float64(foreign))
		m.unmatched.Add(float64(unmatched))
	}
}
