package llm

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the client's Prometheus collectors, labelled by role and
// endpoint (credentials redacted). One Metrics may be shared by the clients
// of every role; register it once with Register.
type Metrics struct {
	requests         *prometheus.CounterVec
	retries          *prometheus.CounterVec
	failures         *prometheus.CounterVec
	latency          *prometheus.HistogramVec
	promptTokens     *prometheus.CounterVec
	completionTokens *prometheus.CounterVec
	drifts           *prometheus.CounterVec
	reusedTokens     *prometheus.CounterVec
	reusedFraction   *prometheus.HistogramVec
	ejections        *prometheus.CounterVec
	decodeFallbacks  *prometheus.CounterVec
	// fallbackBy holds decodeFallbacks' counter of each reason.
	fallbackBy map[string]prometheus.Counter
}

// Failure classes used as the "class" label of mgrpo_llm_failures_total.
const (
	ClassConnection = "connection"
	ClassTimeout    = "timeout"
	ClassStatus429  = "status_429"
	ClassStatus5xx  = "status_5xx"
	ClassStatus4xx  = "status_4xx"
	ClassDecode     = "decode"
	ClassAbort      = "abort"
	ClassCanceled   = "canceled"
)

// Reasons used as the "reason" label of mgrpo_llm_decode_fallback_total:
// why a fast decoder (see doc.go) left an answer, or one member of it, to
// encoding/json; each answer (each event of a stream) counts once per
// reason. All but the last two give the whole body to encoding/json. A
// fast decoder stops at the first thing it does not take, which names the
// reason; where that is no more than an unexpected byte, the body counts
// as syntax if it is not valid JSON and as shape if it is.
const (
	// FallbackSyntax: the body is not valid JSON (truncated, an HTML page,
	// bytes after the object).
	FallbackSyntax = "syntax"
	// FallbackShape: valid JSON with a value the fast decoder does not
	// read where it expects one it does: an id that is not an integer of
	// the int range, a logprob that is not a number in float64's range, a
	// logprobs entry without a logprob, bytes that are not byte values, an
	// SGLang output_token_logprobs entry that is not [logprob, id, …], a
	// member of another type than its field's, nesting deeper than the
	// scanner follows.
	FallbackShape = "shape"
	// FallbackEscapedKey: a member name with a backslash escape or a byte
	// outside ASCII.
	FallbackEscapedKey = "escaped_key"
	// FallbackFoldedKey: a member name that names a field the fast decoder
	// decodes only by case folding ("Model", "LogProb").
	FallbackFoldedKey = "folded_key"
	// FallbackDuplicateKey: a member the fast decoder decodes appears twice
	// in one object.
	FallbackDuplicateKey = "duplicate_key"
	// FallbackTopLogprobs: a logprobs.content entry with a non-empty
	// top_logprobs (the dialects ask for none).
	FallbackTopLogprobs = "top_logprobs"
	// FallbackNGt1: more than one choice (the dialects ask for one).
	FallbackNGt1 = "n_gt_1"
	// FallbackNoChoice: choices is missing, null or empty.
	FallbackNoChoice = "no_choice"
	// FallbackFinishReason: the choice's finish_reason is missing, null,
	// empty or "abort" (DecodeChatResponse's errors).
	FallbackFinishReason = "finish_reason"
	// FallbackMessage: the fast decoder took the body but gave the
	// choice's message to encoding/json as a small object (multi-part
	// content, a value of an unexpected type, a member only encoding/json
	// decodes).
	FallbackMessage = "message"
	// FallbackMember: the fast decoder took the body but gave another
	// member (usage, metadata, a meta_info count, a field only
	// encoding/json decodes such as prompt_filter_results) to
	// encoding/json as a small object.
	FallbackMember = "member"
)

// fallbackReasons lists every FallbackX value.
var fallbackReasons = []string{FallbackSyntax, FallbackShape, FallbackEscapedKey, FallbackFoldedKey, FallbackDuplicateKey,
	FallbackTopLogprobs, FallbackNGt1, FallbackNoChoice, FallbackFinishReason, FallbackMessage, FallbackMember}

// NewMetrics returns unregistered collectors.
func NewMetrics() *Metrics {
	re := []string{"role", "endpoint"}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_requests_total", Help: "Completed LLM calls (successful or not).",
		}, append(re, "outcome")),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_retries_total", Help: "HTTP attempts beyond the first of each call.",
		}, re),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_failures_total", Help: "Failed HTTP attempts by class.",
		}, append(re, "class")),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mgrpo_llm_call_duration_seconds", Help: "Wall time of successful calls, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}, re),
		promptTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_prompt_tokens_total", Help: "Prompt tokens of successful calls.",
		}, re),
		completionTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_completion_tokens_total", Help: "Completion tokens of successful calls.",
		}, re),
		drifts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_drift_events_total", Help: "Turns whose prompt did not extend the previous prompt and completion.",
		}, []string{"role"}),
		reusedTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_reused_prompt_tokens_total",
			Help: "Prompt tokens of successful calls taken as they were from the trajectory's previous prompt and completion (token path); divide by mgrpo_llm_prompt_tokens_total for the reused share.",
		}, re),
		reusedFraction: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mgrpo_llm_reused_prompt_fraction",
			Help:    "Per call after a trajectory's first: the share of the previous prompt and completion its prompt starts with, as they were (1 on the token path).",
			Buckets: []float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1},
		}, []string{"role"}),
		ejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_endpoint_ejections_total", Help: "Endpoints taken out of rotation after consecutive failures.",
		}, re),
		decodeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mgrpo_llm_decode_fallback_total",
			Help: "Answers, or members of answers, the fast JSON decoders left to encoding/json, by reason.",
		}, []string{"reason"}),
		fallbackBy: make(map[string]prometheus.Counter, len(fallbackReasons)),
	}
	// Every reason is exported from the start, at 0.
	for _, r := range fallbackReasons {
		m.fallbackBy[r] = m.decodeFallbacks.WithLabelValues(r)
	}
	return m
}

// Register registers every collector with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.retries, m.failures, m.latency, m.promptTokens, m.completionTokens, m.drifts, m.reusedTokens, m.reusedFraction, m.ejections, m.decodeFallbacks} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// The observe helpers accept a nil receiver so a client without metrics
// needs no checks at the call sites.

func (m *Metrics) success(role, ep string, t *Turn) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(role, ep, "ok").Inc()
	m.latency.WithLabelValues(role, ep).Observe(t.Latency.Seconds())
	m.promptTokens.WithLabelValues(role, ep).Add(float64(len(t.PromptIDs)))
	m.completionTokens.WithLabelValues(role, ep).Add(float64(len(t.CompletionIDs)))
	m.reusedTokens.WithLabelValues(role, ep).Add(float64(t.ReusedPromptTokens))
	if t.prevLen > 0 {
		m.reusedFraction.WithLabelValues(role).Observe(float64(t.ReusedPromptTokens) / float64(t.prevLen))
	}
	if t.Attempts > 1 {
		m.retries.WithLabelValues(role, ep).Add(float64(t.Attempts - 1))
	}
}

func (m *Metrics) giveUp(role, ep string, attempts int) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(role, ep, "error").Inc()
	if attempts > 1 {
		m.retries.WithLabelValues(role, ep).Add(float64(attempts - 1))
	}
}

func (m *Metrics) failure(role, ep, class string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(role, ep, class).Inc()
}

func (m *Metrics) ejected(role, ep string) {
	if m == nil {
		return
	}
	m.ejections.WithLabelValues(role, ep).Inc()
}

// Drift counts n drift events for role.
func (m *Metrics) Drift(role string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.drifts.WithLabelValues(role).Add(float64(n))
}

// fallback counts what one fast decode left to encoding/json.
func (m *Metrics) fallback(f fallbacks) {
	if m == nil {
		return
	}
	if f.body != "" {
		m.fallbackBy[f.body].Inc()
		return
	}
	if f.message {
		m.fallbackBy[FallbackMessage].Inc()
	}
	if f.member {
		m.fallbackBy[FallbackMember].Inc()
	}
}
