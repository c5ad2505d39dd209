package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// Dialects the server speaks.
const (
	DialectVLLM   = "vllm"
	DialectSGLang = "sglang"
)

// Logprobs modes of Config.LogprobsMode, as vLLM's --logprobs-mode names
// them.
const (
	// LogprobsRaw reports the policy's probabilities before temperature
	// and top-k/top-p/min-p (vLLM's default).
	LogprobsRaw = "raw_logprobs"
	// LogprobsProcessed reports the probabilities of the distribution
	// sampled from: tempered, filtered and renormalised.
	LogprobsProcessed = "processed_logprobs"
)

// Defaults applied by Config.withDefaults when a field is zero.
const (
	DefaultModel         = "sim-qwen3"
	DefaultMaxModelLen   = 32768
	DefaultSlots         = 64
	DefaultWeightVersion = "default"
	DefaultMaxBodyBytes  = 32 << 20
	// DefaultMaxLogprobs is vLLM's --max-logprobs default: the most
	// alternatives a request may ask for per position.
	DefaultMaxLogprobs = 20
	// DefaultMaxN caps a request's n. vLLM's VLLM_MAX_N_SEQUENCES defaults
	// to 16384; the sim holds every choice of a request in memory before it
	// answers, so it keeps a lower cap, still far above any group size.
	DefaultMaxN       = 1024
	DefaultCacheBytes = 512 << 20
	// DefaultStreamStallAfter is Faults.StreamStallAfter's default.
	DefaultStreamStallAfter = 3
)

// Faults sets the rate of each injected failure. Every generation request
// (chat, completions, /generate) draws one uniform number from the server's
// seeded fault RNG and fails in at most one way, so the rates must sum to at
// most 1. Zero everywhere (the default) injects nothing.
type Faults struct {
	// Rate500 answers 500 with the dialect's error body.
	Rate500 float64
	// Rate503 answers 503 with the dialect's error body.
	Rate503 float64
	// Rate429 answers 429 with the dialect's error body and a Retry-After
	// header of RetryAfter (rounded up to whole seconds, at least 1).
	Rate429 float64
	// RateDrop writes the response head and part of the body, then closes the
	// connection.
	RateDrop float64
	// RateMalformed answers with the normal status and headers but a
	// truncated, garbled JSON body.
	RateMalformed float64
	// RateStall holds the request without answering until the client goes
	// away, or for StallDuration when it is positive, after which the request
	// is served normally.
	RateStall float64
	// RateStallStream lets a streamed response send its head and its first
	// StreamStallAfter events, then holds it without another byte until the
	// client goes away (or for StallDuration when it is positive, after
	// which the stream goes on): an engine wedged mid-generation. An
	// unstreamed request it falls on is held before any byte, like a
	// stall.
	RateStallStream float64
	// StreamStallAfter is how many events a stalled stream sends first
	// (default 3: the role chunk and two tokens of a chat stream).
	StreamStallAfter int
	// RetryAfter is the Retry-After advertised on injected 429s; default 1s.
	RetryAfter time.Duration
	// StallDuration bounds a stall; zero stalls until the client disconnects.
	StallDuration time.Duration
	// DeathEvery and DeathFor make the endpoint die for a window: after
	// every DeathEvery-th generation request it answers 503 to every
	// generation request for DeathFor (a server restarting, a node lost),
	// long enough to outlast a client's retries. Zero DeathEvery (the
	// default) never dies.
	DeathEvery int
	DeathFor   time.Duration
}

// total returns the summed rates.
func (f Faults) total() float64 {
	return f.Rate500 + f.Rate503 + f.Rate429 + f.RateDrop + f.RateMalformed + f.RateStall + f.RateStallStream
}

// Config configures a Server. The zero value plus a Dialect is usable:
// NewServer fills in the documented defaults.
type Config struct {
	// Dialect is "vllm" or "sglang": it picks the RL extension fields, the
	// error body shape and the dialect-only routes.
	Dialect string
	// Model is the served model name (default "sim-qwen3"). Requests naming
	// another model get 404 in the vLLM dialect; SGLang ignores the name.
	Model string
	// Seed seeds sampling and fault injection.
	Seed uint64
	// MaxModelLen is the context limit in tokens (default 32768).
	MaxModelLen int
	// Slots is the number of sequences generated concurrently (default 64);
	// further requests wait in a queue.
	Slots int
	// KVCapacity is the engine's KV cache in tokens (0: unlimited, no KV
	// model). When set, a running sequence holds its prompt and generated
	// tokens, a request waits until its prompt fits, and past the capacity
	// the newest sequence is preempted and recomputed (kvmodel.go), which
	// shows in latency and in vllm:num_preemptions_total. Non-streamed
	// generations follow the model; streamed ones hold their prompt only.
	KVCapacity int
	// RecomputePerToken is, under the KV model, what a preempted sequence
	// pays per token once readmitted to rebuild its KV (its prompt and every
	// token generated before the preemption), on top of TTFT: a real engine
	// recomputes that prefill, so a preemption late in a long generation
	// costs far more than one early in a short one. 0 (the default): TTFT
	// only. A prefill runs at tens of times the per-sequence decode rate, so
	// PerToken/20 is a plausible figure.
	RecomputePerToken time.Duration
	// TTFT is the time to the first token; PerToken the time per further
	// output token. Both default to zero.
	TTFT     time.Duration
	PerToken time.Duration
	// Faults sets the injected failure rates.
	Faults Faults
	// ToolCallParser turns <tool_call> blocks into message.tool_calls (as
	// vLLM's --tool-call-parser hermes does). Off, the raw text stays in
	// content. NewServer does not default it: set it explicitly (DefaultConfig
	// turns it on).
	ToolCallParser bool
	// ReasoningParser splits <think>…</think> into reasoning_content (as
	// --reasoning-parser qwen3 does). Off, the think block stays in content.
	ReasoningParser bool
	// ReasoningContent makes the vLLM dialect answer a message's reasoning
	// in reasoning_content, as older vLLM servers did, instead of current
	// vLLM's reasoning.
	ReasoningContent bool
	// LogprobsMode is the vLLM dialect's --logprobs-mode: LogprobsRaw (the
	// default when empty) or LogprobsProcessed. The SGLang dialect has no
	// such option and reports, as SGLang does, the tempered probabilities
	// before top-k/top-p/min-p. Sampling is the same in every mode (after
	// temperature and the filters); only the reported logprobs differ, and
	// with temperature 1 and no filter they are the same numbers.
	LogprobsMode string
	// StripReasoning makes the chat template drop <think>…</think> from
	// earlier assistant turns, which breaks the prompt prefix property.
	StripReasoning bool
	// StripReasoningBeforeLastQuery drops it only from assistant turns
	// before the last user message, as Qwen3's template does (see
	// Template).
	StripReasoningBeforeLastQuery bool
	// MergeToolResults, CanonicalToolArgs and TrimContent are the chat
	// template's other behaviours of real models (see Template): tool
	// results merged into one user turn, earlier tool calls' arguments
	// re-serialized in canonical JSON, content trimmed of whitespace. Each
	// breaks the prompt prefix property in its own way.
	MergeToolResults  bool
	CanonicalToolArgs bool
	TrimContent       bool
	// StrictReasoningInput makes the server read an assistant message's
	// reasoning on input only from the field its version writes:
	// "reasoning" in the vLLM dialect, "reasoning_content" with
	// ReasoningContent (older vLLM) and in the SGLang dialect. Reasoning sent
	// in the other field is then ignored, as the real server ignores an
	// unknown field, and the template renders the turn without it. Off, both
	// fields are read.
	StrictReasoningInput bool
	// RecordGenerations keeps a log of every sampled sequence (prompt ids,
	// completion ids, logprobs), read with Server.Generations or GET
	// /sim/generations, so tests can check that what a client trains on is
	// what the engine sampled. It grows without bound: for tests only.
	RecordGenerations bool
	// Disabled turns route families off (they answer 404, as on a server
	// that lacks them), to test a client's probing and fallback.
	Disabled RouteFamilies
	// Skills parameterise the policy; the zero value means
	// policy.DefaultSkills().
	Skills policy.Skills
	// Params are the policy's decision parameters the server starts with;
	// nil means policy.DefaultParams(Skills). A weight update that names a
	// params file replaces them (see weights.go).
	Params *policy.Params
	// CheckpointDir resolves weight paths of the form
	// tinker://MODEL/sampler_weights/NAME to CheckpointDir/MODEL/NAME.json,
	// where the sim trainer saves its sampler weights. Empty, such paths
	// are only recorded.
	CheckpointDir string
	// WeightVersion is the initial served weight version (default "default",
	// like SGLang's --weight-version).
	WeightVersion string
	// KeptVersions is how many of the last served weight versions the
	// server keeps for requests pinned to one (PinHeader); 0 or less means
	// DefaultKeptVersions. The parameters are a few hundred numbers, so
	// keeping several costs nothing.
	KeptVersions int
	// NoDevMode serves the vLLM dialect as vLLM runs without
	// VLLM_SERVER_DEV_MODE=1: the control routes (/sleep, /wake_up,
	// /is_sleeping, /pause, /resume, /is_paused, /reset_prefix_cache,
	// /weight_info, /update_weight_version and the sim's
	// /sim/update_weights) answer 404. It applies to the vLLM dialect only.
	NoDevMode bool
	// Strict rejects unknown request fields with 400. Real servers accept and
	// ignore them (vLLM logs a warning), so it is off by default.
	Strict bool
	// MaxBodyBytes caps request bodies (default 32 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// MaxLogprobs caps top_logprobs (chat), logprobs (completions) and
	// top_logprobs_num (/generate), as vLLM's --max-logprobs does (default
	// 20); -1 allows the whole vocabulary. A request asking for more gets
	// 400.
	MaxLogprobs int
	// MaxN caps a request's n (default DefaultMaxN); more gets 400.
	MaxN int
	// CacheBytes bounds the memory of the caches that spare the server
	// re-reading the history every call resends (default 512 MiB): half
	// for the token ids of chat turns, half for the policy's parsed tool
	// results and tool calls (see policy.NewCached). A cached turn costs
	// about 1.5 times its text's bytes, a parsed tool result about 2 to 3
	// times; what conversations share (the system prompt and tools,
	// recurring pages and search results) is held once. Caching never
	// changes a response, only the CPU it takes: each cache keeps what was
	// used within the last stretch of at least half its bound (see
	// cache.Cache), so a call's earlier turns are found again as long as
	// the histories of all conversations in flight fit there. The default
	// covers 10,000 conversations of 10 KB histories, each distinct, with
	// room to spare; the caches fill to their bound over a long run and
	// stay there.
	CacheBytes int64
	// Clock supplies `created` timestamps (default time.Now); tests fix it.
	Clock func() time.Time
	// Logger receives request and control logs (default: discard).
	Logger *slog.Logger
}

// DefaultConfig returns a vLLM-dialect configuration with the hermes tool
// parser and the qwen3 reasoning parser on, as mgrpo's users run vLLM.
func DefaultConfig() Config {
	return Config{Dialect: DialectVLLM, ToolCallParser: true, ReasoningParser: true}
}

// logprobsMode is the policy's reporting mode of c: SGLang's tempered
// logprobs in the SGLang dialect, else vLLM's LogprobsMode.
func (c Config) logprobsMode() policy.LogprobsMode {
	switch {
	case c.Dialect == DialectSGLang:
		return policy.LogprobsTempered
	case c.LogprobsMode == LogprobsProcessed:
		return policy.LogprobsProcessed
	}
	return policy.LogprobsRaw
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = DefaultMaxModelLen
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.WeightVersion == "" {
		c.WeightVersion = DefaultWeightVersion
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.KeptVersions <= 0 {
		c.KeptVersions = DefaultKeptVersions
	}
	if c.CacheBytes == 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.MaxLogprobs == 0 {
		c.MaxLogprobs = DefaultMaxLogprobs
	}
	if c.MaxN == 0 {
		c.MaxN = DefaultMaxN
	}
	if c.Faults.StreamStallAfter == 0 {
		c.Faults.StreamStallAfter = DefaultStreamStallAfter
	}
	if c.Faults.RetryAfter == 0 {
		c.Faults.RetryAfter = time.Second
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Skills == (policy.Skills{}) {
		c.Skills = policy.DefaultSkills()
	}
	if c.Params == nil {
		c.Params = policy.DefaultParams(c.Skills)
	}
	return c
}

// Validate reports every invalid field, each with how to fix it. It checks
// the configuration as given, treating zero values as "use the default".
func (c Config) Validate() error {
	var errs []error
	switch c.Dialect {
	case DialectVLLM, DialectSGLang:
	default:
		errs = append(errs, fmt.Errorf("Dialect %q: want %q or %q", c.Dialect, DialectVLLM, DialectSGLang))
	}
	if c.NoDevMode && c.Dialect == DialectSGLang {
		errs = append(errs, errors.New("NoDevMode: SGLang has no dev mode; set it with the vllm dialect only"))
	}
	switch c.LogprobsMode {
	case "", LogprobsRaw, LogprobsProcessed:
		if c.LogprobsMode != "" && c.Dialect == DialectSGLang {
			errs = append(errs, fmt.Errorf("LogprobsMode %q: SGLang has no --logprobs-mode (it reports tempered, unfiltered logprobs); set it with the vllm dialect only", c.LogprobsMode))
		}
	default:
		errs = append(errs, fmt.Errorf("LogprobsMode %q: want %q or %q", c.LogprobsMode, LogprobsRaw, LogprobsProcessed))
	}
	if c.MaxModelLen < 0 {
		errs = append(errs, fmt.Errorf("MaxModelLen %d: must be positive (0 means %d)", c.MaxModelLen, DefaultMaxModelLen))
	}
	if c.KVCapacity < 0 {
		errs = append(errs, fmt.Errorf("KVCapacity %d: must not be negative (0: unlimited)", c.KVCapacity))
	}
	if c.RecomputePerToken < 0 {
		errs = append(errs, fmt.Errorf("RecomputePerToken %v: must not be negative (0: a recompute costs TTFT only)", c.RecomputePerToken))
	}
	if c.Slots < 0 {
		errs = append(errs, fmt.Errorf("Slots %d: must be positive (0 means %d)", c.Slots, DefaultSlots))
	}
	if c.TTFT < 0 {
		errs = append(errs, fmt.Errorf("TTFT %v: must not be negative", c.TTFT))
	}
	if c.PerToken < 0 {
		errs = append(errs, fmt.Errorf("PerToken %v: must not be negative", c.PerToken))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxBodyBytes %d: must be positive (0 means %d)", c.MaxBodyBytes, DefaultMaxBodyBytes))
	}
	if c.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("CacheBytes %d: must be positive (0 means %d)", c.CacheBytes, DefaultCacheBytes))
	}
	if c.MaxLogprobs < -1 {
		errs = append(errs, fmt.Errorf("MaxLogprobs %d: must be positive, or -1 for the whole vocabulary (0 means %d)", c.MaxLogprobs, DefaultMaxLogprobs))
	}
	if c.MaxN < 0 {
		errs = append(errs, fmt.Errorf("MaxN %d: must be positive (0 means %d)", c.MaxN, DefaultMaxN))
	}
	rates := []struct {
		name string
		v    float64
	}{
		{"Faults.Rate500", c.Faults.Rate500}, {"Faults.Rate503", c.Faults.Rate503},
		{"Faults.Rate429", c.Faults.Rate429}, {"Faults.RateDrop", c.Faults.RateDrop},
		{"Faults.RateMalformed", c.Faults.RateMalformed}, {"Faults.RateStall", c.Faults.RateStall},
		{"Faults.RateStallStream", c.Faults.RateStallStream},
	}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			errs = append(errs, fmt.Errorf("%s %v: must be a probability in [0, 1]", r.name, r.v))
		}
	}
	if t := c.Faults.total(); t > 1+1e-9 {
		errs = append(errs, fmt.Errorf("Faults: rates sum to %v; lower them so the sum is at most 1", t))
	}
	if c.Faults.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("Faults.RetryAfter %v: must not be negative", c.Faults.RetryAfter))
	}
	if c.Faults.StreamStallAfter < 0 {
		errs = append(errs, fmt.Errorf("Faults.StreamStallAfter %d: must not be negative (0 means %d)", c.Faults.StreamStallAfter, DefaultStreamStallAfter))
	}
	if c.Faults.DeathEvery < 0 {
		errs = append(errs, fmt.Errorf("Faults.DeathEvery %d: must not be negative (0: never dies)", c.Faults.DeathEvery))
	}
	if c.Faults.DeathEvery > 0 && c.Faults.DeathFor <= 0 {
		errs = append(errs, fmt.Errorf("Faults.DeathFor %v: must be positive with DeathEvery", c.Faults.DeathFor))
	}
	if c.Faults.StallDuration < 0 {
		errs = append(errs, fmt.Errorf("Faults.StallDuration %v: must not be negative (0 stalls until the client leaves)", c.Faults.StallDuration))
	}
	if c.Skills != (policy.Skills{}) {
		if err := c.Skills.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("Skills: %w", err))
		}
	}
	return errors.Join(errs...)
}
