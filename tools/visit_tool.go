package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/remote"
	"github.com/mgrpo/mgrpo/tools/visit"
)

// VisitConfig configures the visit tool.
type VisitConfig struct {
	// Fetcher fetches and extracts pages; required.
	Fetcher *visit.Fetcher
	// MaxURLs caps the URLs of one call; 0 means 5.
	MaxURLs int
	// Budget caps the observation in characters, shared by the URLs of a
	// call; 0 means 30000.
	Budget int
	// Summarizer, when set, turns each page into a goal-directed
	// extraction; on failure the tool falls back to the truncated page.
	Summarizer visit.Summarizer
	// Extract sets the summarizer's content sizes.
	Extract visit.ExtractPolicy
	// Cache, when set, stores fetched pages per (backend, URL).
	Cache cache.Cache
	// CacheTTL is the lifetime of a cached page; 0 means the cache's
	// default.
	CacheTTL time.Duration
	// Gate, when set, limits fetches (useful for the Jina backend).
	Gate *remote.Gate
	// Timeout bounds one fetch including waits; 0 means 60s.
	Timeout time.Duration
	// Metrics, when set, counts upstream requests.
	Metrics *Metrics
}

// VisitTool is the "visit" tool: read one or more pages with a goal.
type VisitTool struct {
	cfg    VisitConfig
	flight singleflight.Group
	spec   Spec
}

var _ Tool = (*VisitTool)(nil)

// NewVisit returns the visit tool for cfg.
func NewVisit(cfg VisitConfig) (*VisitTool, error) {
	if cfg.Fetcher == nil {
		return nil, fmt.Errorf("visit tool: %w: no fetcher", remote.ErrConfig)
	}
	if cfg.MaxURLs <= 0 {
		cfg.MaxURLs = 5
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 30000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"url": stringListParam(fmt.Sprintf("The URLs to read, 1 to %d of them (http or https).", cfg.MaxURLs), cfg.MaxURLs),
			"goal": map[string]any{
				"type":        "string",
				"description": "What you want to learn from these pages.",
			},
		},
		"required":             []string{"url", "goal"},
		"additionalProperties": false,
	})
	return &VisitTool{cfg: cfg, spec: Spec{
		Name:        "visit",
		Description: "Read web pages. Takes URLs and a goal and returns each page's main content (or the information relevant to the goal).",
		Parameters:  params,
	}}, nil
}

// Spec implements Tool.
func (t *VisitTool) Spec() Spec { return t.spec }

type visitArgs struct {
	URL  []string `json:"url"`
	Goal string   `json:"goal"`
}

type visitOutcome struct {
	text     string
	src      hitSource
	upstream int
	err      error
}

// Call implements Tool.
func (t *VisitTool) Call(ctx context.Context, raw json.RawMessage) Observation {
	start := time.Now()
	meta := Meta{Tool: "visit", Provider: t.cfg.Fetcher.Backend()}
	var args visitArgs
	if err := json.Unmarshal(raw, &args); err != nil || len(args.URL) == 0 {
		meta.Class, meta.Error = failure.ClassInvalidArgs, "url must be a non-empty array of strings"
		return Observation{Text: "Invalid arguments for visit: url must be a non-empty array of strings.", Meta: meta}
	}
	urls := dedupeURLs(args.URL)
	if len(urls) > t.cfg.MaxURLs {
		urls = urls[:t.cfg.MaxURLs]
	}
	per := t.cfg.Budget / len(urls)
	outs := make([]visitOutcome, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = t.visitOne(ctx, u, args.Goal, per)
		}()
	}
	wg.Wait()
	var b strings.Builder
	failed := 0
	for i, o := range outs {
		if i > 0 {
			b.WriteString("\n=======\n")
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

func (t *VisitTool) visitOne(ctx context.Context, u, goal string, budget int) visitOutcome {
	var upstream atomic.Int32
	out := t.visitPage(ctx, u, goal, budget, &upstream)
	out.upstream = int(upstream.Load())
	return out
}

// visitPage fetches u through the cache and the in-flight calls, counting
// in upstream the fetches it made itself, and renders it for the model.
func (t *VisitTool) visitPage(ctx context.Context, u, goal string, budget int, upstream *atomic.Int32) visitOutcome {
	key := cache.Key("visit", t.cfg.Fetcher.Backend(), strings.TrimSpace(u))
	page, src, err := cachedFlight(ctx, t.cfg.Cache, t.cfg.CacheTTL, &t.flight, key, t.cfg.Timeout, func(fctx context.Context) (visit.Page, error) {
		var p visit.Page
		call := func(c context.Context) error {
			var err error
			upstream.Add(1)
			p, err = t.cfg.Fetcher.Fetch(c, u)
			t.cfg.Metrics.upstreamDone("visit", t.cfg.Fetcher.Backend(), string(remote.Classify(err)))
			return err
		}
		if t.cfg.Gate != nil {
			return p, t.cfg.Gate.Do(fctx, call)
		}
		return p, call(fctx)
	})
	if err != nil {
		return visitOutcome{text: fmt.Sprintf("Could not visit %s (%s): %s\n", u, remote.Classify(err), err), err: err}
	}
	if strings.TrimSpace(page.Text) == "" {
		return visitOutcome{text: fmt.Sprintf("The page %s has no readable text.\n", page.FinalURL), src: src}
	}
	if t.cfg.Summarizer != nil && strings.TrimSpace(goal) != "" {
		ext, _, xerr := visit.Extract(ctx, t.cfg.Summarizer, goal, page.Text, t.cfg.Extract)
		if xerr == nil {
			return visitOutcome{text: clipRunes(ext.Format(page.FinalURL, goal), budget, ""), src: src}
		}
		if errors.Is(xerr, context.Canceled) || errors.Is(xerr, context.DeadlineExceeded) {
			return visitOutcome{text: fmt.Sprintf("Could not visit %s (%s): %s\n", u, remote.Classify(xerr), xerr), err: xerr}
		}
		// Fall back to the page itself, as the issue asks.
	}
	return visitOutcome{text: renderPage(page, budget), src: src}
}

// renderPage shows a page's text within budget characters.
func renderPage(p visit.Page, budget int) string {
	head := "Content of " + p.FinalURL
	if p.Title != "" {
		head += " (" + p.Title + ")"
	}
	head += ":\n\n"
	note := ""
	if p.Truncated {
		note = "\n\n[Only the beginning of this page was downloaded: it exceeds the size limit.]"
	}
	return clipRunes(head+p.Text+note, budget, "\n\n[Page truncated to fit the output budget.]") + "\n"
}

// clipRunes cuts s to at most n runes, appending note when it cuts. It
// counts runes without converting s, which is a whole page.
func clipRunes(s string, n int, note string) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := max(n-utf8.RuneCountInString(note), 0)
	end := 0
	for range keep {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	if !utf8.ValidString(s[:end]) {
		// As the conversion to runes does: each invalid byte becomes U+FFFD.
		return string([]rune(s[:end])) + note
	}
	return s[:end] + note
}

func dedupeURLs(us []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(us))
	for _, u := range us {
		u = strings.TrimSpace(u)
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		out = append(out, u)
	}
	return out
}
