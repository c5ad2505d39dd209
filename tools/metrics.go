package tools

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts tool calls per tool and provider. Create one per process
// with NewMetrics and share it; it is safe for concurrent use.
type Metrics struct {
	calls     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	cacheHits *prometheus.CounterVec
	cacheMiss *prometheus.CounterVec
	shareHits *prometheus.CounterVec
	shareErrs *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	upstream  *prometheus.CounterVec
}

// NewMetrics registers the mgrpo_tool_* metrics with reg (nil: not
// registered, still counted).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_calls_total", Help: "Tool calls by tool, provider and result class (ok or the failure class).",
		}, []string{"tool", "provider", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mgrpo_tool_call_duration_seconds", Help: "Wall time of tool calls.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"tool", "provider"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_cache_hits_total", Help: "Sub-requests (queries, URLs) served from the tool cache.",
		}, []string{"tool", "provider"}),
		cacheMiss: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_cache_misses_total", Help: "Sub-requests not found in the tool cache.",
		}, []string{"tool", "provider"}),
		shareHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_cache_shared_hits_total", Help: "Cache hits served by the shared cache (the run's store); a subset of mgrpo_tool_cache_hits_total.",
		}, []string{"tool", "provider"}),
		shareErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_cache_shared_errors_total", Help: "Failed reads and writes of the shared cache, by operation (get, set); a failed read is a miss.",
		}, []string{"op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_observation_bytes_total", Help: "Bytes of observation text returned to the model.",
		}, []string{"tool", "provider"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_tool_upstream_requests_total", Help: "Requests that reached a provider or site, by result class.",
		}, []string{"tool", "provider", "class"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.latency, m.cacheHits, m.cacheMiss, m.shareHits, m.shareErrs, m.bytes, m.upstream)
	}
	return m
}

func (m *Metrics) observe(meta Meta) {
	class := string(meta.Class)
	if class == "" {
		class = "ok"
	}
	m.calls.WithLabelValues(meta.Tool, meta.Provider, class).Inc()
	m.latency.WithLabelValues(meta.Tool, meta.Provider).Observe(meta.Latency.Seconds())
	m.bytes.WithLabelValues(meta.Tool, meta.Provider).Add(float64(meta.Bytes))
	if meta.CacheHits > 0 {
		m.cacheHits.WithLabelValues(meta.Tool, meta.Provider).Add(float64(meta.CacheHits))
	}
	if meta.SharedHits > 0 {
		m.shareHits.WithLabelValues(meta.Tool, meta.Provider).Add(float64(meta.SharedHits))
	}
	if miss := meta.Requests - meta.CacheHits; miss > 0 {
		m.cacheMiss.WithLabelValues(meta.Tool, meta.Provider).Add(float64(miss))
	}
}

// upstreamDone counts one request that reached the provider.
func (m *Metrics) upstreamDone(tool, provider, class string) {
	if m == nil {
		return
	}
	if class == "" {
		class = "ok"
	}
	m.upstream.WithLabelValues(tool, provider, class).Inc()
}

// sharedCacheError counts one failed operation of the shared cache.
func (m *Metrics) sharedCacheError(op string, _ error) {
	if m == nil {
		return
	}
	m.shareErrs.WithLabelValues(op).Inc()
}
