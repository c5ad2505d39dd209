package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const vllmMetrics = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 6.0
vllm:num_requests_running{engine="1",model_name="m"} 4.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 7.0
`

func TestParseEngineLoad(t *testing.T) {
	cases := []struct {
		name string
		text string
		want EngineLoad
		err  bool
	}{
		{"vllm v1", vllmMetrics, EngineLoad{Running: 10, Waiting: 3, KVUsage: 0.75, Preemptions: 7, HasPreemptions: true}, false},
		{"vllm v0", "vllm:num_requests_running 2\nvllm:num_requests_waiting 0\nvllm:gpu_cache_usage_perc 0.4\n",
			EngineLoad{Running: 2, KVUsage: 0.4}, false},
		{"sglang", "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 5\nsglang:num_queue_reqs{model_name=\"m\"} 1\nsglang:token_usage{model_name=\"m\"} 0.9\nsglang:num_retracted_requests_total{model_name=\"m\"} 2\n",
			EngineLoad{Running: 5, Waiting: 1, KVUsage: 0.9, Preemptions: 2, HasPreemptions: true}, false},
		{"no engine gauges", "process_cpu_seconds_total 3\n", EngineLoad{}, true},
		{"not prometheus text", "<html>not found</html>\n", EngineLoad{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEngineLoad(strings.NewReader(tc.text))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseEngineLoad(f *testing.F) {
	f.Add(vllmMetrics)
	f.Add("sglang:num_queue_reqs 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		l, err := ParseEngineLoad(strings.NewReader(text))
		if err != nil && l != (EngineLoad{}) {
			t.Fatalf("error %v with a load %+v", err, l)
		}
	})
}

// TestPoolAutoTick drives the pool's controller one tick at a time against
// a scripted engine, then against endpoints without metrics (the latency
// fallback).
func TestPoolAutoTick(t *testing.T) {
	var waiting atomic.Int64
	var noMetrics atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || noMetrics.Load() {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("vllm:num_requests_running 4\nvllm:num_requests_waiting " + itoa(waiting.Load()) + "\n"))
	}))
	defer srv.Close()
	p, err := NewPool("planner", []string{srv.URL + "/v1"}, PoolConfig{ProbeInterval: time.Hour, Auto: &AutoConfig{Cap: 64, Initial: 4, Interval: time.Hour}}, srv.Client(), discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if got, ok := p.ConcurrencyLimit(); !ok || got != 4 {
		t.Fatalf("initial limit %d %v, want 4 true", got, ok)
	}
	// Not saturated: nothing waited for the limit, so it holds.
	if got := p.autoTick(ctx); got != 4 {
		t.Fatalf("unsaturated tick: limit %d, want 4", got)
	}
	// Saturate: hold all 4 slots and queue a fifth call.
	for range 4 {
		if err := p.global.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.global.Acquire(ctx, 1) }()
	waitFor(t, "a queued call", func() bool { l := p.auto.lim; l.mu.Lock(); defer l.mu.Unlock(); return l.waiters.Len() == 1 })
	if got := p.autoTick(ctx); got != 5 {
		t.Fatalf("saturated tick, free engine: limit %d, want 5", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waiting.Store(9)
	if got := p.autoTick(ctx); got != 1 {
		t.Fatalf("9 waiting in the engine: limit %d, want 5-ceil(7/2)=1", got)
	}
	if got := p.Status()[0].Waiting; got != 9 {
		t.Fatalf("endpoint waiting %d, want the scraped 9", got)
	}
	// No metrics: the latency fallback decides.
	noMetrics.Store(true)
	p.auto.observeCall(20*time.Millisecond, 0)
	_ = p.autoTick(ctx)
	if p.auto.ctrl.Mode != "latency" {
		t.Fatalf("mode %q with a 404 /metrics, want latency", p.auto.ctrl.Mode)
	}
	for range 5 {
		p.global.Release(1)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
