// Package tools is the farm's tool layer: the Tool interface the agents
// call, the Registry that validates arguments against each tool's JSON
// schema, and the search and visit tools built on the providers of
// tools/search and the fetcher of tools/visit, with caching, singleflight,
// rate limits and metrics. A tool failure is an observation the model reads,
// never a panic and never the end of a trajectory.
package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
)

// Spec is a tool's OpenAI function description.
type Spec struct {
	// Name is the function name the model calls.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage `json:"parameters"`
}

// OpenAI returns the spec in the chat-completions "tools" entry shape:
// {"type": "function", "function": {name, description, parameters}}.
func (s Spec) OpenAI() map[string]any {
	return map[string]any{"type": "function", "function": s}
}

// Meta describes how a call went, for metrics and trajectories; the model
// sees only Observation.Text.
type Meta struct {
	// Tool and Provider name what ran ("search", "serper").
	Tool     string `json:"tool"`
	Provider string `json:"provider,omitempty"`
	// Latency is the wall time of the call.
	Latency time.Duration `json:"latency"`
	// CacheHit is true when every sub-request came from the cache.
	CacheHit bool `json:"cache_hit"`
	// CacheHits counts the sub-requests (queries, URLs) served from the
	// cache; Requests counts all sub-requests.
	CacheHits int `json:"cache_hits"`
	Requests  int `json:"requests"`
	// SharedHits counts the CacheHits the shared cache (the run's store)
	// served: answers another worker, or another run, had fetched. The
	// others came from this process's own cache.
	SharedHits int `json:"shared_hits,omitempty"`
	// Upstream counts the requests this call sent to the provider or site
	// itself, retries included: what a metered API bills. A sub-request
	// served by the cache, or by an identical call already in flight,
	// sends none.
	Upstream int `json:"upstream"`
	// Bytes is the size of the observation text.
	Bytes int `json:"bytes"`
	// Class is empty on success, else the failure class of the call (the
	// first failing sub-request's when some succeeded: see Partial).
	Class failure.Class `json:"class,omitempty"`
	// Partial is true when some sub-requests failed and others did not.
	Partial bool `json:"partial,omitempty"`
	// Error is the failure's text (redacted), empty on success.
	Error string `json:"error,omitempty"`
}

// countHit counts one sub-request's cache outcome.
func (m *Meta) countHit(src hitSource) {
	if src.hit() {
		m.CacheHits++
	}
	if src == sharedHit {
		m.SharedHits++
	}
}

// Failed reports whether the call failed as a whole (every sub-request
// failed, or the arguments were refused).
func (m Meta) Failed() bool { return m.Class != failure.ClassOK && !m.Partial }

// Observation is what a tool call returns: Text goes into the model's
// context, Meta into metrics and the trajectory.
type Observation struct {
	Text string `json:"text"`
	Meta Meta   `json:"meta"`
}

// Tool is one function the model may call.
type Tool interface {
	// Spec returns the function description; it never changes.
	Spec() Spec
	// Call runs the tool on arguments already validated against
	// Spec().Parameters. It always returns an observation: failures are
	// described in Text and classified in Meta, never returned as errors
	// or panics. Safe for concurrent use.
	Call(ctx context.Context, args json.RawMessage) Observation
}

// stringListParam is the JSON schema of a parameter holding 1 to max
// non-empty strings (search queries, URLs).
func stringListParam(description string, max int) map[string]any {
	return map[string]any{
		"type":        "array",
		"description": description,
		"items":       map[string]any{"type": "string", "minLength": 1},
		"minItems":    1,
		"maxItems":    max,
	}
}
