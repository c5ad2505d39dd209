package llm

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// stats are the server's cumulative counters.
type stats struct {
	promptTokens     atomic.Int64
	generationTokens atomic.Int64

	mu       sync.Mutex
	finished map[string]int64 // finished requests by finish reason
	faults   map[string]int64 // injected faults by kind
}

func newStats() *stats {
	return &stats{finished: map[string]int64{}, faults: map[string]int64{}}
}

// account records a finished generation request.
func (s *Server) account(g *genRequest, choices []genChoice) {
	s.record(g.route, g, choices)
	s.stat.promptTokens.Add(int64(len(g.promptIDs)))
	s.stat.mu.Lock()
	defer s.stat.mu.Unlock()
	for _, c := range choices {
		s.stat.generationTokens.Add(int64(len(c.ids)))
		s.stat.finished[c.finish]++
	}
}

// countFault records an injected fault.
func (s *Server) countFault(kind string) {
	s.stat.mu.Lock()
	s.stat.faults[kind]++
	s.stat.mu.Unlock()
}

// handleMetrics serves GET /metrics in Prometheus text format, with the
// dialect's metric names (vllm:… or sglang:…), labelled model_name.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	label := fmt.Sprintf(`model_name=%q`, s.cfg.Model)
	metric := func(name, kind, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %s\n", name, help, name, kind, name, label, fmtFloat(v))
	}
	running, waiting := float64(s.eng.running.Load()), float64(s.eng.waiting.Load())
	prompt, gen := float64(s.stat.promptTokens.Load()), float64(s.stat.generationTokens.Load())
	s.stat.mu.Lock()
	finished := make(map[string]int64, len(s.stat.finished))
	for k, v := range s.stat.finished {
		finished[k] = v
	}
	faults := make(map[string]int64, len(s.stat.faults))
	for k, v := range s.stat.faults {
		faults[k] = v
	}
	s.stat.mu.Unlock()
	prefix := "vllm:"
	if s.cfg.Dialect == DialectSGLang {
		prefix = "sglang:"
		metric("sglang:num_running_reqs", "gauge", "The number of running requests.", running)
		metric("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", waiting)
		metric("sglang:token_usage", "gauge", "The token usage (fraction of the KV cache in use).", s.eng.kvUsage())
		metric("sglang:num_retracted_requests_total", "counter", "Requests retracted for lack of KV cache.", s.eng.preemptions())
	} else {
		metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", running)
		metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting)
		metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", s.eng.kvUsage())
		metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.", s.eng.preemptions())
	}
	metric(prefix+"prompt_tokens_total", "counter", "Number of prefill tokens processed.", prompt)
	metric(prefix+"generation_tokens_total", "counter", "Number of generation tokens processed.", gen)
	name := prefix + "request_success_total"
	fmt.Fprintf(&b, "# HELP %s Count of successfully processed requests.\n# TYPE %s counter\n", name, name)
	for _, reason := range sortedKeys(finished, "stop", "length", "abort") {
		fmt.Fprintf(&b, "%s{finished_reason=%q,%s} %s\n", name, reason, label, fmtFloat(float64(finished[reason])))
	}
	name = "sim:injected_faults_total"
	fmt.Fprintf(&b, "# HELP %s Faults injected by the simulator, by kind.\n# TYPE %s counter\n", name, name)
	for _, kind := range sortedKeys(faults, faultKinds...) {
		fmt.Fprintf(&b, "%s{kind=%q,%s} %s\n", name, kind, label, fmtFloat(float64(faults[kind])))
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// sortedKeys returns always followed by m's other keys, sorted.
func sortedKeys(m map[string]int64, always ...string) []string {
	keys := append([]string(nil), always...)
	var rest []string
	for k := range m {
		found := false
		for _, a := range always {
			found = found || a == k
		}
		if !found {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// fmtFloat writes a sample value the way prometheus_client does (1.0, 0.25).
func fmtFloat(v float64) string {
	s := fmt.Sprintf("%g", v)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
