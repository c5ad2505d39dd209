package llm

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/internal/redact"
	"golang.org/x/sync/semaphore"
)

// PoolConfig configures an endpoint pool.
type PoolConfig struct {
	// MaxInFlightPerEndpoint caps concurrent requests to one endpoint
	// (default 1024); further attempts wait for a slot.
	MaxInFlightPerEndpoint int64
	// MaxInFlight caps concurrent calls of the role across endpoints
	// (default: MaxInFlightPerEndpoint × endpoints).
	MaxInFlight int64
	// EjectAfter is the number of consecutive failed attempts after which
	// an endpoint leaves rotation (default 3).
	EjectAfter int
	// ProbeInterval is how often ejected endpoints are probed on /health,
	// and /metrics scraped when QueueWeighting is on (default 2s).
	ProbeInterval time.Duration
	// QueueWeighting adds each server's waiting-queue length (from its
	// Prometheus /metrics) to its outstanding count when routing.
	QueueWeighting bool
	// StickyCapacity bounds the trajectory → endpoint table (default
	// 100000); beyond it arbitrary entries are forgotten.
	StickyCapacity int
	// Auto, when set, makes the role-wide cap adaptive (--concurrency
	// auto): it moves between Auto.Min and Auto.Cap from the engines'
	// metrics (autoscrape.go); MaxInFlight defaults to Auto.Cap.
	Auto *AutoConfig
}

func (c PoolConfig) withDefaults(n int) PoolConfig {
	if c.MaxInFlightPerEndpoint <= 0 {
		c.MaxInFlightPerEndpoint = 1024
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = c.MaxInFlightPerEndpoint * int64(n)
		if c.Auto != nil {
			c.MaxInFlight = c.Auto.withDefaults(n).Cap
		}
	}
	if c.EjectAfter <= 0 {
		c.EjectAfter = 3
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = 2 * time.Second
	}
	if c.StickyCapacity <= 0 {
		c.StickyCapacity = 100000
	}
	return c
}

// endpoint is one server of a pool.
type endpoint struct {
	idx     int
	base    *url.URL // scheme://host[:port][/prefix], without a trailing /v1
	display string   // base with credentials redacted
	sem     *semaphore.Weighted

	outstanding atomic.Int64
	waiting     atomic.Int64 // server-reported queue length

	// Guarded by Pool.mu.
	failures int
	ejected  bool
	// failEpoch counts the endpoint's failures ever; an attempt notes it
	// when it starts, so a success that began before a later failure does
	// not clear that failure.
	failEpoch uint64
}

// EndpointStatus is a snapshot of one endpoint, for tests and dashboards.
type EndpointStatus struct {
	Endpoint    string
	Outstanding int64
	Waiting     int64
	Failures    int
	Ejected     bool
}

// Pool routes a role's calls over its endpoints: least outstanding requests
// first, a trajectory sticking to its endpoint while that is healthy,
// ejection after consecutive failures and re-admission after a /health
// probe succeeds. It is safe for concurrent use. Close stops its prober.
type Pool struct {
	role string
	cfg  PoolConfig
	eps  []*endpoint
	// global caps the role's calls in flight: a semaphore.Weighted, or
	// auto's Limiter.
	global slots
	auto   *autoState // nil unless PoolConfig.Auto
	probe  *http.Client
	log    *slog.Logger
	met    *Metrics

	mu     sync.Mutex
	sticky map[string]int

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewPool validates the base URLs and starts the prober. A base URL may end
// in /v1, which is dropped: routes are added per dialect.
func NewPool(role string, bases []string, cfg PoolConfig, probe *http.Client, log *slog.Logger, met *Metrics) (*Pool, error) {
	if len(bases) == 0 {
		return nil, fmt.Errorf("pool %s: %w", role, ErrNoEndpoints)
	}
	cfg = cfg.withDefaults(len(bases))
	p := &Pool{
		role: role, cfg: cfg, probe: probe, log: log, met: met,
		sticky: make(map[string]int),
	}
	if cfg.Auto != nil {
		ctrl := NewController(*cfg.Auto, len(bases))
		p.auto = &autoState{lim: NewLimiter(ctrl.Limit()), ctrl: ctrl}
		p.global = p.auto.lim
	} else {
		p.global = semaphore.NewWeighted(cfg.MaxInFlight)
	}
	for i, b := range bases {
		u, err := url.Parse(strings.TrimSpace(b))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("pool %s: endpoint %d %q: want an http(s) base URL", role, i, redact.URL(b))
		}
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
		u.RawQuery, u.Fragment = "", ""
		p.eps = append(p.eps, &endpoint{idx: i, base: u, display: redact.URL(u.String()), sem: semaphore.NewWeighted(cfg.MaxInFlightPerEndpoint)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.wg.Add(1)
	go p.prober(ctx)
	if p.auto != nil {
		p.wg.Add(1)
		go p.autoLoop(ctx, p.auto.ctrl.Config().Interval)
	}
	return p, nil
}

// Close stops the prober and waits for it. It is idempotent.
func (p *Pool) Close() {
	p.closeOnce.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
}

// Status returns a snapshot of every endpoint.
func (p *Pool) Status() []EndpointStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]EndpointStatus, len(p.eps))
	for i, e := range p.eps {
		out[i] = EndpointStatus{Endpoint: e.display, Outstanding: e.outstanding.Load(), Waiting: e.waiting.Load(), Failures: e.failures, Ejected: e.ejected}
	}
	return out
}

// Forget drops the stickiness of a finished trajectory.
func (p *Pool) Forget(key string) {
	p.mu.Lock()
	delete(p.sticky, key)
	p.mu.Unlock()
}

// pick chooses the endpoint of one attempt and counts it outstanding. The
// trajectory's sticky endpoint wins while it is in rotation and is not
// avoid (the endpoint the previous attempt of this call failed on);
// otherwise the least loaded endpoint in rotation, then any endpoint.
func (p *Pool) pick(key string, avoid int) *endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	var chosen *endpoint
	if key != "" {
		if i, ok := p.sticky[key]; ok && !p.eps[i].ejected && i != avoid {
			chosen = p.eps[i]
		}
	}
	if chosen == nil {
		chosen = p.leastLoaded(func(e *endpoint) bool { return !e.ejected && e.idx != avoid })
	}
	if chosen == nil {
		chosen = p.leastLoaded(func(e *endpoint) bool { return !e.ejected })
	}
	if chosen == nil {
		// Everything is ejected: keep trying rather than fail the run; a
		// success re-admits the endpoint.
		chosen = p.leastLoaded(func(e *endpoint) bool { return e.idx != avoid })
	}
	if chosen == nil {
		chosen = p.leastLoaded(func(*endpoint) bool { return true })
	}
	if key != "" {
		// A trajectory moves home when its endpoint is ejected or has just
		// failed it (avoid): otherwise its next call would go back to the
		// failing endpoint and, once that is ejected, move a second time.
		i, ok := p.sticky[key]
		if !ok || p.eps[i].ejected || i == avoid {
			if !ok && len(p.sticky) >= p.cfg.StickyCapacity {
				for k := range p.sticky {
					delete(p.sticky, k)
					break
				}
			}
			p.sticky[key] = chosen.idx
		}
	}
	chosen.outstanding.Add(1)
	return chosen
}

// leastLoaded returns the endpoint with the fewest outstanding (plus
// waiting, when weighting) among those ok accepts, or nil. p.mu is held.
func (p *Pool) leastLoaded(ok func(*endpoint) bool) *endpoint {
	var best *endpoint
	var bestLoad int64
	for _, e := range p.eps {
		if !ok(e) {
			continue
		}
		load := e.outstanding.Load()
		if p.cfg.QueueWeighting {
			load += e.waiting.Load()
		}
		if best == nil || load < bestLoad {
			best, bestLoad = e, load
		}
	}
	return best
}

// report records an attempt's outcome, treating the attempt as current: a
// success re-admits and resets the failure count; a failure counts toward
// ejection. Successes of attempts that may predate a failure go through
// reportAttempt.
func (p *Pool) report(e *endpoint, ok bool) {
	p.reportAttempt(e, ok, math.MaxUint64)
}

// epoch returns e's failure epoch, to pass to reportAttempt when the
// attempt ends.
func (p *Pool) epoch(e *endpoint) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return e.failEpoch
}

// reportAttempt is report for an attempt that started at failure epoch
// start. A success only resets the failure count and re-admits the endpoint
// when no failure was recorded after the attempt started: an answer that was
// on its way when the server died says nothing about the server now.
func (p *Pool) reportAttempt(e *endpoint, ok bool, start uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ok {
		if start < e.failEpoch {
			return
		}
		if e.ejected {
			p.log.Info("llm endpoint re-admitted after a successful call", "role", p.role, "endpoint", e.display)
		}
		e.failures, e.ejected = 0, false
		return
	}
	e.failures++
	e.failEpoch++
	if !e.ejected && e.failures >= p.cfg.EjectAfter {
		e.ejected = true
		p.met.ejected(p.role, e.display)
		p.log.Warn("llm endpoint ejected", "role", p.role, "endpoint", e.display, "consecutive_failures", e.failures)
	}
}

// prober probes ejected endpoints and, with QueueWeighting, scrapes every
// endpoint's waiting queue, once per ProbeInterval until ctx ends.
func (p *Pool) prober(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, e := range p.eps {
			p.mu.Lock()
			ejected := e.ejected
			p.mu.Unlock()
			if ejected && p.healthy(ctx, e) {
				p.mu.Lock()
				e.failures, e.ejected = 0, false
				p.mu.Unlock()
				p.log.Info("llm endpoint re-admitted after a health probe", "role", p.role, "endpoint", e.display)
			}
			if p.cfg.QueueWeighting && !ejected {
				if n, ok := p.scrapeWaiting(ctx, e); ok {
					e.waiting.Store(n)
				}
			}
		}
	}
}

// healthy reports whether GET /health answers 200 within the probe interval.
func (p *Pool) healthy(ctx context.Context, e *endpoint) bool {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeInterval)
	defer cancel()
	return p.probeHealth(ctx, e) == nil
}

// scrapeWaiting sums the waiting-queue gauges of e's /metrics.
func (p *Pool) scrapeWaiting(ctx context.Context, e *endpoint) (int64, bool) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeInterval)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath("metrics").String(), nil)
	if err != nil {
		return 0, false
	}
	resp, err := p.probe.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	return parseWaiting(bufio.NewScanner(resp.Body))
}

// parseWaiting sums the samples of the waiting-queue gauges in a Prometheus
// text exposition.
func parseWaiting(sc *bufio.Scanner) (int64, bool) {
	var sum float64
	found := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// The waiting-queue gauges of vLLM and SGLang.
		for _, g := range [...]string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"} {
			if !strings.HasPrefix(line, g) {
				continue
			}
			rest := line[len(g):]
			if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			if i := strings.LastIndexByte(rest, '}'); i >= 0 {
				rest = rest[i+1:]
			}
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				continue
			}
			if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
				sum += v
				found = true
			}
		}
	}
	return int64(sum), found
}
