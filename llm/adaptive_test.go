package llm

import (
	"testing"
	"time"
)

func TestControllerMetrics(t *testing.T) {
	c := NewController(AutoConfig{Cap: 40, Initial: 8}, 1)
	steps := []struct {
		name      string
		load      EngineLoad
		inUse     int64
		saturated bool
		want      int64
		decision  Decision
	}{
		{"free slots, limit binds: slow start", EngineLoad{Endpoints: 1, Running: 8, HasPreemptions: true}, 8, true, 10, DecisionGrow},
		{"again", EngineLoad{Endpoints: 1, Running: 10, HasPreemptions: true}, 10, true, 12, DecisionGrow},
		{"limit does not bind: hold", EngineLoad{Endpoints: 1, Running: 5, HasPreemptions: true}, 5, false, 12, DecisionHold},
		{"two wait (the headroom): hold", EngineLoad{Endpoints: 1, Running: 12, Waiting: 2, HasPreemptions: true}, 12, true, 12, DecisionHold},
		{"queue beyond headroom: back off by half the excess", EngineLoad{Endpoints: 1, Running: 10, Waiting: 6, HasPreemptions: true}, 12, true, 10, DecisionBackoff},
		{"after a back-off: additive growth, one waiting", EngineLoad{Endpoints: 1, Running: 10, Waiting: 1, HasPreemptions: true}, 10, true, 11, DecisionGrow},
		{"kv nearly full: hold", EngineLoad{Endpoints: 1, Running: 11, KVUsage: 0.96, HasPreemptions: true}, 11, true, 11, DecisionHold},
		{"preemptions rose: back-off", EngineLoad{Endpoints: 1, Running: 11, Preemptions: 3, HasPreemptions: true}, 11, true, 8, DecisionBackoff},
		{"preemptions flat: grow", EngineLoad{Endpoints: 1, Running: 6, Preemptions: 3, HasPreemptions: true}, 8, true, 9, DecisionGrow},
	}
	for _, s := range steps {
		got := c.Observe(s.load, s.inUse, s.saturated)
		if got != s.want || c.Last != s.decision {
			t.Fatalf("%s: limit %d (%s), want %d (%s)", s.name, got, c.Last, s.want, s.decision)
		}
	}
}

func TestControllerBounds(t *testing.T) {
	c := NewController(AutoConfig{Cap: 20, Min: 3, Initial: 16}, 1)
	for range 10 {
		c.Observe(EngineLoad{Endpoints: 1}, 20, true)
	}
	if got := c.Limit(); got != 20 {
		t.Fatalf("limit %d after growth, want the cap 20", got)
	}
	for range 20 {
		c.Observe(EngineLoad{Endpoints: 1, Running: 4, Waiting: 100}, 20, true)
	}
	if got := c.Limit(); got != 3 {
		t.Fatalf("limit %d after back-offs, want the floor 3", got)
	}
	// The defaults: the initial limit is 8 per endpoint, within the cap.
	if got := NewController(AutoConfig{}, 2).Limit(); got != 16 {
		t.Fatalf("default initial limit %d, want 16", got)
	}
	if got := NewController(AutoConfig{Cap: 4}, 2).Limit(); got != 4 {
		t.Fatalf("initial limit %d above the cap 4", got)
	}
}

func TestControllerLatencyFallback(t *testing.T) {
	c := NewController(AutoConfig{Cap: 100, Initial: 10}, 1)
	ms := time.Millisecond
	if got := c.ObserveLatency(0, true); got != 10 || c.Last != DecisionHold {
		t.Fatalf("no calls: limit %d (%s), want 10 held", got, c.Last)
	}
	if got := c.ObserveLatency(10*ms, true); got != 12 || c.Mode != "latency" {
		t.Fatalf("at the baseline, saturated: limit %d mode %s, want 12 latency", got, c.Mode)
	}
	if got := c.ObserveLatency(17*ms, true); got != 12 {
		t.Fatalf("latency ×1.7: limit %d, want held at 12", got)
	}
	if got := c.ObserveLatency(25*ms, true); got != 9 || c.Last != DecisionBackoff {
		t.Fatalf("latency ×2.5: limit %d (%s), want 9 backoff", got, c.Last)
	}
	if got := c.ObserveLatency(10*ms, true); got != 10 {
		t.Fatalf("back at the baseline: limit %d, want +1 = 10", got)
	}
}
