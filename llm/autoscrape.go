package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// autoState is a pool's adaptive limit: the resizable limiter its calls
// wait on, the controller that moves it and the latency the fallback reads.
type autoState struct {
	lim  *Limiter
	ctrl *Controller // guarded by mu
	mu   sync.Mutex

	// latency of the calls finished since the last tick (fallback mode):
	// the sum of their seconds per generated token and their count.
	latSum atomic.Int64 // nanoseconds
	latN   atomic.Int64
}

// observeCall records a finished call for the latency fallback: its time
// after it got its slot, per generated token (plus one, the first).
func (a *autoState) observeCall(d time.Duration, completionTokens int) {
	if a == nil {
		return
	}
	a.latSum.Add(int64(d) / int64(completionTokens+1))
	a.latN.Add(1)
}

// takeLatency returns the mean latency per token since the previous call
// (0 for none) and starts a new window.
func (a *autoState) takeLatency() time.Duration {
	n := a.latN.Swap(0)
	s := a.latSum.Swap(0)
	if n == 0 {
		return 0
	}
	return time.Duration(s / n)
}

// ConcurrencyLimit returns the pool's adaptive limit and true under
// --concurrency auto, or 0 and false for a fixed one.
func (p *Pool) ConcurrencyLimit() (int64, bool) {
	if p.auto == nil {
		return 0, false
	}
	return p.auto.lim.Limit(), true
}

// autoLoop runs the controller every interval until ctx ends.
func (p *Pool) autoLoop(ctx context.Context, every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.autoTick(ctx)
	}
}

// autoTick scrapes the endpoints in rotation, lets the controller decide and
// applies its limit: from the engines' metrics when at least one endpoint
// served them, else from the calls' latency.
func (p *Pool) autoTick(ctx context.Context) int64 {
	a := p.auto
	load := p.scrapeLoad(ctx)
	saturated := a.lim.TakeSaturated()
	perToken := a.takeLatency()
	a.mu.Lock()
	prev := a.ctrl.Limit()
	var limit int64
	if load.Endpoints > 0 {
		limit = a.ctrl.Observe(load, a.lim.InUse(), saturated)
	} else {
		limit = a.ctrl.ObserveLatency(perToken, saturated)
	}
	mode, decision := a.ctrl.Mode, a.ctrl.Last
	a.mu.Unlock()
	a.lim.SetLimit(limit)
	if limit != prev {
		p.log.Debug("llm concurrency limit", "role", p.role, "limit", limit, "was", prev, "mode", mode, "decision", string(decision),
			"running", load.Running, "waiting", load.Waiting, "kv_usage", load.KVUsage)
	}
	return limit
}

// scrapeLoad reads every endpoint's /metrics (ejected ones are skipped) and
// sums what the engines report.
func (p *Pool) scrapeLoad(ctx context.Context) EngineLoad {
	var out EngineLoad
	for _, e := range p.eps {
		if p.isEjected(e) {
			continue
		}
		l, err := p.scrapeEngine(ctx, e)
		if err != nil {
			continue
		}
		out.Endpoints++
		out.Running += l.Running
		out.Waiting += l.Waiting
		out.KVUsage = max(out.KVUsage, l.KVUsage)
		out.Preemptions += l.Preemptions
		out.HasPreemptions = out.HasPreemptions || l.HasPreemptions
		e.waiting.Store(int64(l.Waiting))
	}
	return out
}

// scrapeEngine reads one endpoint's /metrics within the controller's
// interval.
func (p *Pool) scrapeEngine(ctx context.Context, e *endpoint) (EngineLoad, error) {
	ctx, cancel := context.WithTimeout(ctx, p.auto.ctrl.Config().Interval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath("metrics").String(), nil)
	if err != nil {
		return EngineLoad{}, err
	}
	resp, err := p.probe.Do(req)
	if err != nil {
		return EngineLoad{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return EngineLoad{}, fmt.Errorf("metrics: status %d", resp.StatusCode)
	}
	return ParseEngineLoad(io.LimitReader(resp.Body, 16<<20))
}

// The engines' gauges and counters the controller reads, by what they mean.
// vLLM v1 names its KV gauge kv_cache_usage_perc, v0 gpu_cache_usage_perc;
// SGLang calls preemptions retractions.
var (
	runningNames = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	waitingNames = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	kvNames      = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	preemptNames = []string{"vllm:num_preemptions", "vllm:num_preemptions_total", "sglang:num_retracted_requests_total", "sglang:num_retracted_requests"}
)

// ParseEngineLoad reads the Prometheus text exposition of one engine. It
// fails when the text does not parse or holds neither a running nor a
// waiting gauge: such an endpoint has no metrics the controller can use.
// Series of several models or ranks are summed (KV usage: the highest).
func ParseEngineLoad(r io.Reader) (EngineLoad, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return EngineLoad{}, fmt.Errorf("parse metrics: %w", err)
	}
	var l EngineLoad
	found := false
	if v, ok := sumOf(fams, runningNames); ok {
		l.Running, found = v, true
	}
	if v, ok := sumOf(fams, waitingNames); ok {
		l.Waiting, found = v, true
	}
	if !found {
		return EngineLoad{}, fmt.Errorf("parse metrics: no running or waiting gauge")
	}
	for _, n := range kvNames {
		for _, m := range fams[n].GetMetric() {
			l.KVUsage = max(l.KVUsage, valueOf(m))
		}
	}
	l.Preemptions, l.HasPreemptions = sumOf(fams, preemptNames)
	return l, nil
}

// sumOf sums the samples of the first of names present in fams.
func sumOf(fams map[string]*dto.MetricFamily, names []string) (float64, bool) {
	for _, n := range names {
		f, ok := fams[n]
		if !ok {
			continue
		}
		var s float64
		for _, m := range f.GetMetric() {
			s += valueOf(m)
		}
		return s, true
	}
	return 0, false
}

// valueOf is a sample's value, whatever its type.
func valueOf(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}
