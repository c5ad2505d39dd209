package gateway

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's own counters; the calls it forwards are counted
// by the role clients' llm.Metrics.
type Metrics struct {
	decodeFallbacks *prometheus.CounterVec
	// fallbackBy holds decodeFallbacks' counter of each reason.
	fallbackBy map[string]prometheus.Counter
}

// NewMetrics returns unregistered collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		decodeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_gateway_request_decode_fallback_total",
			Help: "Agents' chat requests the gateway's fast decoder left to encoding/json, by reason.",
		}, []string{"reason"}),
		fallbackBy: make(map[string]prometheus.Counter, len(requestFallbackReasons)),
	}
	// Every reason is exported from the start, at 0.
	for _, r := range requestFallbackReasons {
		m.fallbackBy[r] = m.decodeFallbacks.WithLabelValues(r)
	}
	return m
}

// Register registers every collector with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return r.Register(m.decodeFallbacks)
}

// fallback counts a request body left to encoding/json for reason; m may
// be nil.
func (m *Metrics) fallback(reason string) {
	if m != nil {
		m.fallbackBy[reason].Inc()
	}
}
