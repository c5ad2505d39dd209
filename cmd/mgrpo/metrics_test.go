package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// scrape reads url's metrics, nil when the server is not answering.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// sum adds the values (counters, gauges, histogram counts) of fam's series
// whose labels include want.
func sum(fam *dto.MetricFamily, want map[string]string) float64 {
	if fam == nil {
		return 0
	}
	var total float64
	for _, m := range fam.Metric {
		ok := true
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// TestMetricsDuringARun scrapes /metrics while a rollout runs against a
// slow, faulty sim and checks each family the farm, the client and the
// tools export.
func TestMetricsDuringARun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a rollout against a sim server")
	}
	cfg := simllm.DefaultConfig()
	cfg.TTFT = 150 * time.Millisecond
	cfg.Faults.Rate503 = 0.05
	dir := t.TempDir()
	s := startSimServers(t, dir, cfg, 4)
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runMain(context.Background(), []string{"mgrpo", "rollout", "--tasks", s.tasks, "--out", filepath.Join(dir, "out"),
			"--planner-url", s.llmURL, "--planner-model", "sim-qwen3", "--executor-url", s.llmURL, "--executor-model", "sim-qwen3",
			"--search-provider", "searxng", "--search-url", s.webURL, "--allow-host", s.webHost,
			"--steps", "2", "--batch-size", "4", "--group-size", "2", "--metrics-addr", "127.0.0.1:0"},
			io.Discard, &stderr, nil, nil)
	}()
	waitFor(t, &stderr, "serving metrics")
	url := regexp.MustCompile(`url=(http://\S+/metrics)`).FindStringSubmatch(stderr.String())[1]
	// Scrape while step 2 runs: step 1's phases are then in, and rollouts
	// are in flight.
	waitFor(t, &stderr, `msg="step start" step=2`)
	fams := scrape(t, url)
	if fams == nil {
		t.Fatalf("no answer from %s", url)
	}
	checks := []struct {
		family string
		labels map[string]string
		min    float64
	}{
		{"mgrpo_farm_rollouts_total", map[string]string{"result": "ok"}, 8},
		{"mgrpo_farm_rollouts_in_flight", nil, 0},
		{"mgrpo_farm_steps_total", nil, 1},
		{"mgrpo_farm_step_phase_duration_seconds", map[string]string{"phase": "rollout"}, 1},
		{"mgrpo_farm_step_phase_duration_seconds", map[string]string{"phase": "assemble"}, 1},
		{"mgrpo_farm_step_phase_duration_seconds", map[string]string{"phase": "write"}, 1},
		{"mgrpo_farm_policy_version", nil, 0},
		{"mgrpo_farm_drift_events_total", nil, 0},
		{"mgrpo_llm_requests_total", map[string]string{"role": "planner"}, 8},
		{"mgrpo_llm_requests_total", map[string]string{"role": "executor"}, 1},
		{"mgrpo_llm_prompt_tokens_total", map[string]string{"role": "planner"}, 100},
		{"mgrpo_llm_completion_tokens_total", map[string]string{"role": "executor"}, 1},
		{"mgrpo_llm_call_duration_seconds", map[string]string{"role": "planner", "endpoint": s.llmURL}, 8},
		{"mgrpo_llm_failures_total", map[string]string{"class": "status_5xx"}, 1},
		{"mgrpo_llm_retries_total", nil, 1},
		{"mgrpo_llm_decode_fallback_total", nil, 0},
		{"mgrpo_tool_calls_total", map[string]string{"tool": "search", "provider": "searxng"}, 1},
		{"mgrpo_tool_cache_misses_total", map[string]string{"tool": "search"}, 1},
		{"go_goroutines", nil, 1},
	}
	for _, c := range checks {
		fam, ok := fams[c.family]
		if !ok {
			t.Errorf("/metrics has no %s", c.family)
			continue
		}
		if got := sum(fam, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.family, c.labels, got, c.min)
		}
	}
	if got := sum(fams["mgrpo_farm_rollouts_in_flight"], nil); got > 8 {
		t.Errorf("%v rollouts in flight, more than a step's 8", got)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if scrape(t, url) != nil {
		t.Error("the metrics server still answers after the run")
	}
}

func TestMetricsAddrInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, "rollout", "--sim", "--out", out, "--metrics-addr", l.Addr().String())
	if code != 2 || !strings.Contains(stderr, "--metrics-addr "+l.Addr().String()) {
		t.Errorf("exit %d, stderr %q; want 2 naming the address in use", code, stderr)
	}
}
