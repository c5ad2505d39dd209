package tools

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/remote"
	"github.com/mgrpo/mgrpo/tools/search"
	"github.com/mgrpo/mgrpo/tools/ssrf"
	"github.com/mgrpo/mgrpo/tools/visit"
)

// WebConfig describes the executors' standard toolbox: a search tool on one
// provider and a visit tool behind the SSRF guard, sharing one cache.
type WebConfig struct {
	// Search configures the provider (name, base URL, index, keys).
	Search search.Config
	// SearchRate and SearchConcurrency limit the provider (0: unlimited).
	SearchRate        float64
	SearchConcurrency int
	// MaxQueries caps queries per search call; Results hits per query.
	MaxQueries int
	Results    int
	// AllowHosts opens named hosts (host or host:port) to visit despite the
	// SSRF guard: local corpora, the simulated web.
	AllowHosts []string
	// VisitBudget caps a visit observation in characters (0: 30000).
	VisitBudget int
	// Summarizer, when set, turns pages into goal-directed extractions.
	Summarizer visit.Summarizer
	// CacheEntries sizes the in-memory cache both tools share (0: 10000
	// entries); CacheTTL is the lifetime of their entries (0: one hour), in
	// both levels when there is a shared cache.
	CacheEntries int
	CacheTTL     time.Duration
	// SharedCache, when set, is a cache shared with other processes (the
	// run's store: every worker of the run and every run on the same
	// store), read on a miss of the in-memory cache and written with every
	// fetched result (see cache.Tiered). Its failures are misses, counted
	// in Metrics and logged to Logger.
	SharedCache cache.Cache
	// CacheScope separates the shared cache's entries of tools that answer
	// the same arguments differently (a simulated web of another seed):
	// toolboxes share entries only within one scope. Search entries are
	// also scoped by the provider's name, URL and index.
	CacheScope string
	// Logger receives the shared cache's failures (nil: discarded).
	Logger *slog.Logger
	// Metrics, when set, receives the tools' counters; Registry options
	// pass on to NewRegistry.
	Metrics *Metrics
	Options []RegistryOption
}

// NewWebToolbox builds the registry holding the search and visit tools of
// cfg. Configuration errors (unknown provider, missing key, bad allow-list
// entry) are returned before anything is contacted.
func NewWebToolbox(cfg WebConfig) (*Registry, error) {
	provider, err := search.New(cfg.Search)
	if err != nil {
		return nil, err // search.New names the provider and the problem
	}
	entries, ttl := cfg.CacheEntries, cfg.CacheTTL
	if entries <= 0 {
		entries = 10000
	}
	if ttl <= 0 {
		ttl = time.Hour
	}
	lru := cache.NewLRU(entries, ttl)
	searchCache, visitCache := cache.Cache(lru), cache.Cache(lru)
	if cfg.SharedCache != nil {
		tiered := func(ns string) cache.Cache {
			return cache.NewTiered(cache.TieredConfig{Local: lru, Shared: cfg.SharedCache, Namespace: ns, TTL: ttl,
				OnError: cfg.Metrics.sharedCacheError, Logger: cfg.Logger})
		}
		// One local LRU for both tools (their keys start with the tool's
		// name); in the store, search results are scoped by the provider's
		// endpoint as well, pages only by the scope.
		s := cfg.Search
		searchCache = tiered(strings.Join([]string{cfg.CacheScope, s.Name, s.BaseURL, s.Index}, "\x00"))
		visitCache = tiered(cfg.CacheScope)
	}
	var gate *remote.Gate
	if cfg.SearchRate > 0 || cfg.SearchConcurrency > 0 {
		gate = remote.NewGate(remote.GateConfig{Rate: cfg.SearchRate, Concurrency: cfg.SearchConcurrency})
	}
	searchTool, err := NewSearch(SearchConfig{Provider: provider, MaxQueries: cfg.MaxQueries, Results: cfg.Results, Cache: searchCache, Gate: gate, Metrics: cfg.Metrics})
	if err != nil {
		return nil, err
	}
	guard, err := ssrf.New(ssrf.Config{Allow: cfg.AllowHosts})
	if err != nil {
		return nil, fmt.Errorf("allow-list: %w", err)
	}
	fetcher, err := visit.New(visit.Config{Guard: guard})
	if err != nil {
		return nil, err
	}
	visitTool, err := NewVisit(VisitConfig{Fetcher: fetcher, Budget: cfg.VisitBudget, Summarizer: cfg.Summarizer, Cache: visitCache, Metrics: cfg.Metrics})
	if err != nil {
		return nil, err
	}
	opts := cfg.Options
	if cfg.Metrics != nil {
		opts = append([]RegistryOption{WithMetrics(cfg.Metrics)}, opts...)
	}
	reg, err := NewRegistry([]Tool{searchTool, visitTool}, opts...)
	if err != nil {
		return nil, err
	}
	return reg, nil
}
