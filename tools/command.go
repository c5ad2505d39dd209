package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mgrpo/mgrpo/tools/search"
	"github.com/mgrpo/mgrpo/tools/ssrf"
	"github.com/mgrpo/mgrpo/tools/visit"
)

// ErrToolFailed is returned by the Run*Command functions when the tool
// returned an error observation (refusals included); the observation has
// been printed. Commands exit non-zero on it.
var ErrToolFailed = errors.New("tool returned an error observation")

// SearchCommand holds the options of `mgrpo tool search`.
type SearchCommand struct {
	// Provider is a search.Names() entry.
	Provider string
	// SearchURL overrides the provider's base URL.
	SearchURL string
	// Index is the corpus index directory of the local provider.
	Index string
	// Queries are the queries, as the model would send them.
	Queries []string
	// Results is the number of hits per query; 0 means 10.
	Results int
	// Timeout bounds the call; 0 means DefaultCommandTimeout.
	Timeout time.Duration
	// Getenv reads API keys; nil means os.Getenv.
	Getenv func(string) string
}

// RunSearchCommand runs the search tool once through a Registry, exactly as
// an agent would, and prints the observation to stdout. It returns a
// configuration error, ErrToolFailed (wrapped with the failure class) when
// the observation reports a failure, or nil.
func RunSearchCommand(ctx context.Context, opts SearchCommand, stdout io.Writer) error {
	p, err := search.New(search.Config{Name: opts.Provider, BaseURL: opts.SearchURL, Index: opts.Index, Getenv: opts.Getenv})
	if err != nil {
		return err
	}
	if c, ok := p.(io.Closer); ok {
		defer c.Close()
	}
	st, err := NewSearch(SearchConfig{Provider: p, Results: opts.Results, MaxQueries: max(len(opts.Queries), 1), Timeout: opts.Timeout})
	if err != nil {
		return err
	}
	args, _ := json.Marshal(map[string]any{"query": opts.Queries})
	return runOnce(ctx, st, args, opts.Timeout, stdout)
}

// VisitCommand holds the options of `mgrpo tool visit`.
type VisitCommand struct {
	// URLs are the pages to read.
	URLs []string
	// Goal is the reading goal ("" allowed).
	Goal string
	// AllowHosts opens HOST or HOST:PORT past the SSRF guard.
	AllowHosts []string
	// Backend is "direct" (default) or "jina"; JinaURL overrides the
	// reader's base URL.
	Backend, JinaURL string
	// Budget caps the observation in characters; 0 means 30000.
	Budget int
	// MaxBytes caps a page download; 0 means 5 MiB.
	MaxBytes int64
	// MaxRedirects caps redirects; 0 means 5.
	MaxRedirects int
	// Timeout bounds the call; 0 means DefaultCommandTimeout.
	Timeout time.Duration
	// Summarizer, when set, enables goal-directed extraction; the caller
	// builds it (its model client is the composition root's to make).
	Summarizer visit.Summarizer
	// Getenv reads JINA_API_KEY; nil means os.Getenv.
	Getenv func(string) string
}

// RunVisitCommand runs the visit tool once and prints the observation to
// stdout; errors as RunSearchCommand.
func RunVisitCommand(ctx context.Context, opts VisitCommand, stdout io.Writer) error {
	g, err := ssrf.New(ssrf.Config{Allow: opts.AllowHosts})
	if err != nil {
		return err
	}
	f, err := visit.New(visit.Config{
		Guard: g, Backend: opts.Backend, JinaURL: opts.JinaURL, MaxBytes: opts.MaxBytes,
		MaxRedirects: opts.MaxRedirects, Getenv: opts.Getenv,
	})
	if err != nil {
		return err
	}
	cfg := VisitConfig{Fetcher: f, Budget: opts.Budget, MaxURLs: max(len(opts.URLs), 1), Timeout: opts.Timeout}
	cfg.Summarizer = opts.Summarizer
	vt, err := NewVisit(cfg)
	if err != nil {
		return err
	}
	args, _ := json.Marshal(map[string]any{"url": opts.URLs, "goal": opts.Goal})
	return runOnce(ctx, vt, args, opts.Timeout, stdout)
}

// DefaultCommandTimeout bounds a tool call from the command line when the
// command gives no timeout.
const DefaultCommandTimeout = 60 * time.Second

func runOnce(ctx context.Context, t Tool, args json.RawMessage, timeout time.Duration, stdout io.Writer) error {
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reg, err := NewRegistry([]Tool{t})
	if err != nil {
		return err
	}
	obs := reg.Call(ctx, t.Spec().Name, args)
	if _, err := io.WriteString(stdout, obs.Text); err != nil {
		return fmt.Errorf("write observation: %w", err)
	}
	if obs.Meta.Class != "" {
		return fmt.Errorf("%w (%s)", ErrToolFailed, obs.Meta.Class)
	}
	return nil
}
