// Package search holds the web search providers behind the search tool:
// serper, searxng, brave, tavily, a Search-R1-compatible retriever and a
// local bleve index, each chosen by name with a base URL override, and the
// Markdown formatting of their results for the model.
package search

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/tools/corpus"
	"github.com/mgrpo/mgrpo/tools/remote"
)

// Result is one search hit.
type Result struct {
	Title   string `json:"title"`
	Link    string `json:"link"`
	Snippet string `json:"snippet"`
}

// Provider runs one query against one search backend.
type Provider interface {
	// Name returns the provider's registry name ("serper", …).
	Name() string
	// Search returns at most n hits for query, best first. An empty
	// result is not an error. Failures are *httpretry.StatusError for HTTP
	// answers, or wrap remote.ErrDecode, remote.ErrConfig or the
	// transport's error. Safe for concurrent use.
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// Config selects and configures a provider.
type Config struct {
	// Name is one of Names().
	Name string
	// BaseURL overrides the provider's default endpoint root (for
	// searxng and retriever it is required unless the default fits).
	BaseURL string
	// Index is the bleve index directory of the local provider.
	Index string
	// Timeout bounds one request including retries; 0 means 20s.
	Timeout time.Duration
	// Retries is how many times a connection error or 5xx is retried.
	Retries int
	// MaxBytes caps a response body; 0 means 4 MiB.
	MaxBytes int64
	// Getenv reads API keys; nil means os.Getenv. Keys are read from
	// SERPER_API_KEY, BRAVE_API_KEY and TAVILY_API_KEY only.
	Getenv func(string) string
	// Client overrides the HTTP client (tests); nil builds one.
	Client *resty.Client
}

// Environment variables holding the providers' API keys.
const (
	EnvSerper = "SERPER_API_KEY"
	EnvBrave  = "BRAVE_API_KEY"
	EnvTavily = "TAVILY_API_KEY"
)

// spec is one provider's entry in the registry.
type spec struct {
	name string
	// base is the default endpoint root of an HTTP provider; keyEnv the
	// environment variable of its API key ("" when it needs none).
	base   string
	keyEnv string
	// build makes the provider: from h for HTTP providers, from cfg for
	// the others (local).
	build func(cfg Config, h httpProvider) (Provider, error)
}

// registry lists every provider New knows, in the order help texts name
// them. It is the only list of providers: Names, NameList, the CLI's help
// and every "unknown provider" error are derived from it. A new provider is
// one file with its type and one entry here (and a case in the conformance
// test, conformance_test.go).
var registry = [...]spec{
	{name: "serper", base: "https://google.serper.dev", keyEnv: EnvSerper, build: httpBuild(func(h httpProvider) Provider { return &Serper{h} })},
	{name: "searxng", base: "http://127.0.0.1:8888", build: httpBuild(func(h httpProvider) Provider { return &SearXNG{h} })},
	{name: "brave", base: "https://api.search.brave.com", keyEnv: EnvBrave, build: httpBuild(func(h httpProvider) Provider { return &Brave{h} })},
	{name: "tavily", base: "https://api.tavily.com", keyEnv: EnvTavily, build: httpBuild(func(h httpProvider) Provider { return &Tavily{h} })},
	{name: "retriever", base: "http://127.0.0.1:8000", build: httpBuild(func(h httpProvider) Provider { return &Retriever{h} })},
	{name: "local", build: buildLocal},
}

// httpBuild adapts a constructor of an HTTP provider to spec.build.
func httpBuild(f func(h httpProvider) Provider) func(Config, httpProvider) (Provider, error) {
	return func(_ Config, h httpProvider) (Provider, error) { return f(h), nil }
}

// buildLocal opens the bleve index of the local provider.
func buildLocal(cfg Config, _ httpProvider) (Provider, error) {
	if cfg.Index == "" {
		return nil, fmt.Errorf("search provider local: %w: no index directory", remote.ErrConfig)
	}
	ix, err := corpus.Open(cfg.Index)
	if err != nil {
		return nil, fmt.Errorf("search provider local: %w", err)
	}
	return &Local{ix: ix}, nil
}

// lookup returns the provider called name.
func lookup(name string) (spec, bool) {
	for _, sp := range registry {
		if sp.name == name {
			return sp, true
		}
	}
	return spec{}, false
}

// Names lists the provider names New accepts, in registry order.
func Names() []string {
	names := make([]string, len(registry))
	for i, sp := range registry {
		names[i] = sp.name
	}
	return names
}

// NameList names the providers for help texts and errors:
// "serper, searxng, brave, tavily, retriever or local".
func NameList() string {
	names := Names()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// KeyEnv returns the environment variable holding the API key of the
// provider called name, or "" when it needs none or is unknown.
func KeyEnv(name string) string {
	sp, _ := lookup(strings.ToLower(strings.TrimSpace(name)))
	return sp.keyEnv
}

// New returns the provider cfg names. A provider that needs an API key
// and finds none in its environment variable is a configuration error
// (wrapping remote.ErrConfig) that names the variable, never a value.
func New(cfg Config) (Provider, error) {
	name := strings.ToLower(strings.TrimSpace(cfg.Name))
	sp, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unsupported search provider %q (known: %s)", cfg.Name, NameList())
	}
	if sp.base == "" {
		return sp.build(cfg, httpProvider{})
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	h := httpProvider{name: name, base: strings.TrimRight(sp.base, "/"), client: cfg.Client, maxBytes: cfg.MaxBytes}
	if cfg.BaseURL != "" {
		h.base = strings.TrimRight(cfg.BaseURL, "/")
	}
	if sp.keyEnv != "" {
		h.key = strings.TrimSpace(getenv(sp.keyEnv))
		if h.key == "" {
			return nil, fmt.Errorf("search provider %s: %w: set %s", name, remote.ErrConfig, sp.keyEnv)
		}
	}
	if h.client == nil {
		timeout := cfg.Timeout
		if timeout <= 0 {
			timeout = 20 * time.Second
		}
		h.client = remote.NewClient(remote.ClientConfig{Timeout: timeout, Retries: cfg.Retries, UserAgent: "mgrpo-tools/1"})
	}
	if h.maxBytes <= 0 {
		h.maxBytes = 4 << 20
	}
	return sp.build(cfg, h)
}

// httpProvider is what the HTTP providers share.
type httpProvider struct {
	name     string
	base     string
	key      string
	client   *resty.Client
	maxBytes int64
}

// Name implements Provider.
func (h httpProvider) Name() string { return h.name }

// do executes r and returns the body of a 2xx answer; other answers become
// a *httpretry.StatusError whose message msg extracts from the body.
func (h httpProvider) do(r *resty.Request, method, path string, msg func([]byte) string) ([]byte, error) {
	resp, err := remote.Execute(r, method, h.base+path, h.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", h.name, method, scrub(err, h.key))
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, fmt.Errorf("%s: %w", h.name, remote.StatusErrorFrom(resp, msg(resp.Body), h.key))
	}
	if resp.Truncated {
		return nil, fmt.Errorf("%s: %w: body larger than %d bytes", h.name, remote.ErrDecode, h.maxBytes)
	}
	return resp.Body, nil
}

// scrub keeps err's chain but drops the key from its text, in case a
// transport error quoted a request that carried it.
func scrub(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return &scrubbed{err: err, text: redact.Secrets(err.Error(), key)}
}

type scrubbed struct {
	err  error
	text string
}

func (s *scrubbed) Error() string { return s.text }
func (s *scrubbed) Unwrap() error { return s.err }

// clampN keeps n within [1, hi].
func clampN(n, hi int) int {
	return max(1, min(n, hi))
}

// firstResults returns the results of the first n of count hits that
// result keeps (web APIs send hits with neither link nor title, which are
// skipped), as every web provider's decoder does.
func firstResults(count, n int, result func(i int) (Result, bool)) []Result {
	out := make([]Result, 0, max(min(n, count), 0))
	for i := 0; i < count && len(out) < n; i++ {
		if r, ok := result(i); ok {
			out = append(out, r)
		}
	}
	return out
}
