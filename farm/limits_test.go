package farm

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConcurrencyLimitMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	gather := func() map[string]float64 {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range fams {
			if f.GetName() != "mgrpo_farm_concurrency_limit" {
				continue
			}
			for _, s := range f.GetMetric() {
				out[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
			}
		}
		return out
	}
	if got := gather(); len(got) != 0 {
		t.Fatalf("fixed concurrency: %v, want no series", got)
	}
	limits := map[string]int64{"planner": 20, "executor": 12}
	m.watchLimits(func() map[string]int64 { return limits })
	got := gather()
	if got["planner"] != 20 || got["executor"] != 12 || len(got) != 2 {
		t.Fatalf("got %v, want planner 20 and executor 12", got)
	}
}
