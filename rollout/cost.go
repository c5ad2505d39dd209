package rollout

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Prices are what the paid parts of a run cost, in the user's currency
// (USD in the documentation's examples). Every price is 0 unless set: the
// meter still counts, and a run's cost is then 0.
type Prices struct {
	// SearchRequest is the price of one request to the search provider
	// (one query; cache hits are free). Serper lists about 0.001.
	SearchRequest float64 `yaml:"search_request" json:"search_request" doc:"price of one search provider request (cache hits are free); default 0"`
	// VisitRequest is the price of one page fetched (cache hits are free):
	// 0 for direct fetches, a reader service's price otherwise.
	VisitRequest float64 `yaml:"visit_request" json:"visit_request" doc:"price of one page fetch (cache hits are free); default 0"`
	// JudgeCall is the price of one LLM judge answer (correctness or
	// expert), when the judge is a hosted API billed per call.
	JudgeCall float64 `yaml:"judge_call" json:"judge_call" doc:"price of one LLM judge answer; default 0"`
	// PromptPerMillion and CompletionPerMillion price a million prompt or
	// completion tokens, by role (planner, executor, single); a role
	// without an entry costs nothing.
	PromptPerMillion     map[string]float64 `yaml:"prompt_per_million" json:"prompt_per_million" doc:"price of a million prompt tokens by role, e.g. {planner: 0.5, executor: 0.2}; default none"`
	CompletionPerMillion map[string]float64 `yaml:"completion_per_million" json:"completion_per_million" doc:"price of a million completion tokens by role; default none"`
	// MCPCall prices one call that reached an MCP server, by server
	// ("kb") or by server and tool as offered to the model ("kb.search",
	// which wins); cache hits are free.
	MCPCall map[string]float64 `yaml:"mcp_call" json:"mcp_call,omitempty" doc:"price of one MCP tool call by server or server.tool, e.g. {kb: 0.001, kb.search: 0.002} (cache hits are free); default none"`
}

// Usage counts the billable work of a step (or a run): requests that
// reached a search provider or a site, judge answers, and model tokens by
// role, with their cost under the run's Prices.
type Usage struct {
	SearchRequests   int              `json:"search_requests"`
	VisitRequests    int              `json:"visit_requests"`
	JudgeCalls       int              `json:"judge_calls"`
	PromptTokens     map[string]int64 `json:"prompt_tokens"`
	CompletionTokens map[string]int64 `json:"completion_tokens"`
	// MCPCalls counts the calls that reached an MCP server, by
	// "server.tool" (the tool as offered to the model).
	MCPCalls map[string]int64 `json:"mcp_calls,omitempty"`
	Cost     float64          `json:"cost"`
}

// Add adds o's counts and cost to u.
func (u *Usage) Add(o Usage) {
	u.SearchRequests += o.SearchRequests
	u.VisitRequests += o.VisitRequests
	u.JudgeCalls += o.JudgeCalls
	u.PromptTokens = addCounts(u.PromptTokens, o.PromptTokens)
	u.CompletionTokens = addCounts(u.CompletionTokens, o.CompletionTokens)
	u.MCPCalls = addCounts(u.MCPCalls, o.MCPCalls)
	u.Cost += o.Cost
}

func addCounts(dst, src map[string]int64) map[string]int64 {
	if dst == nil && len(src) > 0 {
		dst = make(map[string]int64, len(src))
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// Validate reports a price that is negative or not a finite number, naming
// its key under prices.
func (p Prices) Validate() error {
	check := func(key string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("prices.%s %v: must be a finite number ≥ 0", key, v)
		}
		return nil
	}
	errs := []error{check("search_request", p.SearchRequest), check("visit_request", p.VisitRequest), check("judge_call", p.JudgeCall)}
	for role, v := range p.PromptPerMillion {
		errs = append(errs, check("prompt_per_million."+role, v))
	}
	for role, v := range p.CompletionPerMillion {
		errs = append(errs, check("completion_per_million."+role, v))
	}
	for key, v := range p.MCPCall {
		errs = append(errs, check("mcp_call."+key, v))
	}
	return errors.Join(errs...)
}

// Price sets u.Cost from its counts under p.
func (u *Usage) Price(p Prices) {
	c := float64(u.SearchRequests)*p.SearchRequest + float64(u.VisitRequests)*p.VisitRequest + float64(u.JudgeCalls)*p.JudgeCall
	for role, n := range u.PromptTokens {
		c += float64(n) / 1e6 * p.PromptPerMillion[role]
	}
	for role, n := range u.CompletionTokens {
		c += float64(n) / 1e6 * p.CompletionPerMillion[role]
	}
	for key, n := range u.MCPCalls {
		price, ok := p.MCPCall[key]
		if !ok {
			server, _, _ := strings.Cut(key, ".")
			price = p.MCPCall[server]
		}
		c += float64(n) * price
	}
	u.Cost = c
}
