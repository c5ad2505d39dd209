package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/remote"
	"github.com/mgrpo/mgrpo/tools/search"
)

// SearchConfig configures the search tool.
type SearchConfig struct {
	// Provider runs the queries.
	Provider search.Provider
	// MaxQueries caps the queries of one call; 0 means 5.
	MaxQueries int
	// Results is the number of hits asked per query; 0 means 10.
	Results int
	// Cache, when set, stores results per (provider, normalized query).
	Cache cache.Cache
	// CacheTTL is the lifetime of a cached result; 0 means the cache's
	// default.
	CacheTTL time.Duration
	// Gate, when set, rate-limits and caps the provider's requests and
	// backs off on 429.
	Gate *remote.Gate
	// Timeout bounds one provider request, including rate-limit waits;
	// 0 means 60s.
	Timeout time.Duration
	// Metrics, when set, counts upstream requests.
	Metrics *Metrics
}

// SearchTool is the "search" tool: one or more queries, one numbered
// Markdown result list per query. Identical concurrent queries share one
// provider request (singleflight) and results are cached.
type SearchTool struct {
	cfg    SearchConfig
	flight singleflight.Group
	spec   Spec
}

var _ Tool = (*SearchTool)(nil)

// NewSearch returns the search tool for cfg.
func NewSearch(cfg SearchConfig) (*SearchTool, error) {
	if cfg.Provider == nil {
		return nil, fmt.Errorf("search tool: %w: no provider", remote.ErrConfig)
	}
	if cfg.MaxQueries <= 0 {
		cfg.MaxQueries = 5
	}
	if cfg.Results <= 0 {
		cfg.Results = 10
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": stringListParam(fmt.Sprintf("The search queries, 1 to %d of them; each runs as its own web search.", cfg.MaxQueries), cfg.MaxQueries),
		},
		"required":             []string{"query"},
		"additionalProperties": false,
	})
	return &SearchTool{cfg: cfg, spec: Spec{
		Name:        "search",
		Description: "Search the web. Takes an array of queries and returns, for each, a numbered list of results with title, link and snippet.",
		Parameters:  params,
	}}, nil
}

// Spec implements Tool.
func (t *SearchTool) Spec() Spec { return t.spec }

type searchArgs struct {
	Query []string `json:"query"`
}

type queryOutcome struct {
	text     string
	src      hitSource
	upstream int
	err      error
}

// Call implements Tool.
func (t *SearchTool) Call(ctx context.Context, raw json.RawMessage) Observation {
	start := time.Now()
	meta := Meta{Tool: "search", Provider: t.cfg.Provider.Name()}
	var args searchArgs
	if err := json.Unmarshal(raw, &args); err != nil || len(args.Query) == 0 {
		meta.Class, meta.Error = failure.ClassInvalidArgs, "query must be a non-empty array of strings"
		return Observation{Text: "Invalid arguments for search: query must be a non-empty array of strings.", Meta: meta}
	}
	queries := dedupe(args.Query)
	if len(queries) > t.cfg.MaxQueries {
		queries = queries[:t.cfg.MaxQueries]
	}
	outs := make([]queryOutcome, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var upstream atomic.Int32
			res, src, err := t.searchOne(ctx, q, &upstream)
			if err != nil {
				outs[i] = queryOutcome{text: search.FormatError(q, string(remote.Classify(err)), err.Error()), err: err, upstream: int(upstream.Load())}
				return
			}
			outs[i] = queryOutcome{text: search.Format(q, res), src: src, upstream: int(upstream.Load())}
		}()
	}
	wg.Wait()
	var b strings.Builder
	failed := 0
	for i, o := range outs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(o.text)
		meta.Requests++
		meta.Upstream += o.upstream
		meta.countHit(o.src)
		if o.err != nil {
			failed++
			if meta.Class == failure.ClassOK {
				meta.Class, meta.Error = remote.Classify(o.err), o.err.Error()
			}
		}
	}
	meta.CacheHit = meta.CacheHits == meta.Requests
	meta.Partial = failed > 0 && failed < len(outs)
	meta.Latency = time.Since(start)
	return Observation{Text: b.String(), Meta: meta}
}

// searchOne answers one query from the cache, or from the one in-flight
// provider request for the same key, or by asking the provider; upstream
// counts the requests it sent itself. It says where the answer came from.
func (t *SearchTool) searchOne(ctx context.Context, q string, upstream *atomic.Int32) ([]search.Result, hitSource, error) {
	key := cache.Key("search", t.cfg.Provider.Name(), cache.Normalize(q), strconv.Itoa(t.cfg.Results))
	return cachedFlight(ctx, t.cfg.Cache, t.cfg.CacheTTL, &t.flight, key, t.cfg.Timeout, func(fctx context.Context) ([]search.Result, error) {
		var res []search.Result
		call := func(c context.Context) error {
			var err error
			upstream.Add(1)
			res, err = t.cfg.Provider.Search(c, q, t.cfg.Results)
			t.cfg.Metrics.upstreamDone("search", t.cfg.Provider.Name(), string(remote.Classify(err)))
			return err
		}
		if t.cfg.Gate != nil {
			return res, t.cfg.Gate.Do(fctx, call)
		}
		return res, call(fctx)
	})
}

// dedupe drops blank and repeated (after normalization) queries, keeping
// the first spelling.
func dedupe(qs []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(qs))
	for _, q := range qs {
		q = strings.TrimSpace(q)
		n := cache.Normalize(q)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, q)
	}
	return out
}
