package llm

import (
	"math"
	"time"
)

// AutoConfig turns on the adaptive in-flight limit of a role's pool
// (--concurrency auto): a controller moves the role-wide limit between Min
// and Cap from the engines' own /metrics, or from the calls' latency when no
// endpoint serves metrics.
type AutoConfig struct {
	// Cap is the limit's ceiling (default 512).
	Cap int64
	// Min is the limit's floor (default 1).
	Min int64
	// Initial is the first limit (default min(Cap, 8 × endpoints)).
	Initial int64
	// Interval is how often the endpoints are scraped and the limit
	// decided (default 500ms).
	Interval time.Duration
	// KVHigh is the KV-cache usage (0..1, the fullest endpoint's) at and
	// above which the limit stops growing (default 0.95).
	KVHigh float64
}

// Defaults of AutoConfig.
const (
	DefaultAutoCap      = 512
	DefaultAutoInterval = 500 * time.Millisecond
)

func (c AutoConfig) withDefaults(endpoints int) AutoConfig {
	if c.Cap <= 0 {
		c.Cap = DefaultAutoCap
	}
	if c.Min <= 0 {
		c.Min = 1
	}
	c.Min = min(c.Min, c.Cap)
	if c.Initial <= 0 {
		c.Initial = 8 * int64(max(endpoints, 1))
	}
	c.Initial = min(max(c.Initial, c.Min), c.Cap)
	if c.Interval <= 0 {
		c.Interval = DefaultAutoInterval
	}
	if c.KVHigh <= 0 {
		c.KVHigh = 0.95
	}
	return c
}

// EngineLoad is one scrape of a role's endpoints, over those that answered
// with metrics.
type EngineLoad struct {
	// Endpoints is how many endpoints answered with usable metrics.
	Endpoints int
	// Running and Waiting are the engines' running and queued requests,
	// summed (vllm:num_requests_running/_waiting, sglang:num_running_reqs/
	// num_queue_reqs).
	Running, Waiting float64
	// KVUsage is the fullest endpoint's KV-cache usage, 0..1
	// (vllm:kv_cache_usage_perc or the older gpu_cache_usage_perc,
	// sglang:token_usage).
	KVUsage float64
	// Preemptions is the engines' cumulative preemptions (vLLM) or
	// retractions (SGLang), summed; HasPreemptions says a counter was found.
	Preemptions    float64
	HasPreemptions bool
}

// Decision names what the controller did at a tick, for logs, tests and the
// progress line.
type Decision string

// The controller's decisions.
const (
	DecisionGrow    Decision = "grow"
	DecisionHold    Decision = "hold"
	DecisionBackoff Decision = "backoff"
)

// Controller decides a role's in-flight limit, one observation at a time.
// It is plain data (no clock, no goroutine): the pool's loop feeds it, and
// tests drive it with made-up loads. It is not safe for concurrent use.
type Controller struct {
	cfg   AutoConfig
	limit int64
	// slowStart grows the limit by a quarter a tick until the first
	// back-off, then by one (additive increase, multiplicative decrease).
	slowStart bool
	prevPre   float64
	havePre   bool
	// baseline is the lowest latency per token seen (latency mode), drifting
	// up 1% a tick so a workload that changed for good is learnt again.
	baseline float64
	// Mode is "metrics" or "latency": what the last decision was based on.
	Mode string
	// Last is the last decision.
	Last Decision
}

// NewController returns a controller at cfg's initial limit for a pool of
// endpoints.
func NewController(cfg AutoConfig, endpoints int) *Controller {
	cfg = cfg.withDefaults(endpoints)
	return &Controller{cfg: cfg, limit: cfg.Initial, slowStart: true}
}

// Limit returns the current limit.
func (c *Controller) Limit() int64 { return c.limit }

// Config returns the configuration with its defaults filled.
func (c *Controller) Config() AutoConfig { return c.cfg }

// Observe decides from one scrape. inUse is how many calls the pool holds
// now and saturated whether calls waited for the limit since the previous
// tick: the limit only grows when it is what bounds the work. It backs off
// multiplicatively when the engines preempted since the previous scrape, by
// half the excess when more requests wait in the engines' queues than a
// small headroom (a short queue keeps a freed slot busy while the client
// sends the next request), holds while the KV cache is nearly full (an
// engine at full KV with nothing preempted is an engine used well), and
// grows while fewer requests wait than the headroom and the KV cache has
// room.
func (c *Controller) Observe(l EngineLoad, inUse int64, saturated bool) int64 {
	c.Mode = "metrics"
	preempted := false
	if l.HasPreemptions {
		preempted = c.havePre && l.Preemptions > c.prevPre
		c.prevPre, c.havePre = l.Preemptions, true
	}
	headroom := math.Max(2, math.Ceil(l.Running/8))
	base := min(c.limit, max(inUse, c.cfg.Min))
	switch {
	case preempted:
		c.backoff(int64(math.Floor(float64(base) * 0.8)))
	case l.Waiting > headroom:
		c.backoff(base - int64(math.Ceil((l.Waiting-headroom)/2)))
	case l.Waiting < headroom && l.KVUsage < c.cfg.KVHigh && saturated:
		c.grow()
	default:
		c.Last = DecisionHold
	}
	return c.limit
}

// ObserveLatency is the fallback for endpoints without metrics (404, not
// Prometheus text): AIMD on the calls' latency per generated token over the
// last interval (time to first token dominates it for short answers; the
// batch's slowdown and the engine's queue for long ones). perToken ≤ 0
// means no call finished: the limit holds.
func (c *Controller) ObserveLatency(perToken time.Duration, saturated bool) int64 {
	c.Mode = "latency"
	if perToken <= 0 {
		c.Last = DecisionHold
		return c.limit
	}
	v := perToken.Seconds()
	if c.baseline == 0 || v < c.baseline {
		c.baseline = v
	}
	ratio := v / c.baseline
	c.baseline *= 1.01
	switch {
	case ratio > 2:
		c.backoff(int64(math.Floor(float64(c.limit) * 0.8)))
	case ratio < 1.5 && saturated:
		c.grow()
	default:
		c.Last = DecisionHold
	}
	return c.limit
}

func (c *Controller) grow() {
	step := int64(1)
	if c.slowStart {
		step = max(1, c.limit/4)
	}
	c.limit = min(c.limit+step, c.cfg.Cap)
	c.Last = DecisionGrow
}

func (c *Controller) backoff(to int64) {
	c.slowStart = false
	c.limit = min(max(to, c.cfg.Min), c.limit, c.cfg.Cap)
	c.Last = DecisionBackoff
}
