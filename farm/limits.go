package farm

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// limitCollector serves mgrpo_farm_concurrency_limit{role}: the adaptive
// request limits of --concurrency auto, read when scraped, so the gauge is
// current between progress reports. Without a source it yields nothing.
type limitCollector struct {
	desc *prometheus.Desc
	fn   atomic.Pointer[func() map[string]int64]
}

// watchLimits makes fn the collector's source.
func (m *Metrics) watchLimits(fn func() map[string]int64) {
	if m == nil {
		return
	}
	m.limits.fn.Store(&fn)
}

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	fn := c.fn.Load()
	if fn == nil {
		return
	}
	for role, n := range (*fn)() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), role)
	}
}
