// Package visit fetches the pages a model asks to read and turns them into
// text: HTML through readability and a Markdown converter, plain text and
// JSON as they are, PDF and other binary types refused with a clear
// "unsupported content type" error. Every model-steered request goes
// through the SSRF guard; the Jina Reader backend is optional.
package visit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-resty/resty/v2"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/tools/remote"
	"github.com/mgrpo/mgrpo/tools/ssrf"
)

// Page is a fetched and extracted page.
type Page struct {
	// URL is the URL asked for; FinalURL the one answered after redirects.
	URL      string `json:"url"`
	FinalURL string `json:"final_url"`
	// Title is the page title when one was found.
	Title string `json:"title"`
	// ContentType is the media type of the answer ("text/html").
	ContentType string `json:"content_type"`
	// Text is the extracted content: Markdown for HTML.
	Text string `json:"text"`
	// Bytes is the size of the body read.
	Bytes int `json:"bytes"`
	// Truncated is true when the body exceeded the byte cap and only its
	// beginning was read.
	Truncated bool `json:"truncated"`
}

// Backend names.
const (
	BackendDirect = "direct"
	BackendJina   = "jina"
)

// EnvJina holds the optional Jina Reader API key.
const EnvJina = "JINA_API_KEY"

// Config configures a Fetcher.
type Config struct {
	// Guard vets every model-chosen URL; required.
	Guard *ssrf.Guard
	// Backend is "direct" (default) or "jina".
	Backend string
	// JinaURL overrides https://r.jina.ai.
	JinaURL string
	// Timeout bounds one fetch including retries; 0 means 20s.
	Timeout time.Duration
	// MaxBytes caps the body read; 0 means 5 MiB.
	MaxBytes int64
	// MaxRedirects caps redirects; 0 means 5.
	MaxRedirects int
	// Retries is how many times a connection error, 5xx or 429 is
	// retried (429 honouring Retry-After); 0 means 2, negative none.
	Retries int
	// UserAgent is sent with each request.
	UserAgent string
	// Getenv reads JINA_API_KEY; nil means os.Getenv.
	Getenv func(string) string
}

// Fetcher fetches pages. It is safe for concurrent use.
type Fetcher struct {
	cfg     Config
	client  *resty.Client
	jina    *resty.Client
	jinaKey string
}

// New returns a Fetcher for cfg.
func New(cfg Config) (*Fetcher, error) {
	if cfg.Guard == nil {
		return nil, fmt.Errorf("visit: %w: no SSRF guard", remote.ErrConfig)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 5 << 20
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = 5
	}
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	cfg.Retries = max(cfg.Retries, 0)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "Mozilla/5.0 (compatible; mgrpo-visit/1)"
	}
	if cfg.Backend == "" {
		cfg.Backend = BackendDirect
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	f := &Fetcher{cfg: cfg}
	redirects := cfg.Guard.CheckRedirect(cfg.MaxRedirects)
	f.client = remote.NewClient(remote.ClientConfig{
		Transport: cfg.Guard.Transport(), Timeout: cfg.Timeout, Retries: cfg.Retries,
		Retry429: true, CheckRedirect: redirects, UserAgent: cfg.UserAgent,
	})
	switch cfg.Backend {
	case BackendDirect:
	case BackendJina:
		if cfg.JinaURL == "" {
			cfg.JinaURL = "https://r.jina.ai"
			f.cfg.JinaURL = cfg.JinaURL
		}
		f.jinaKey = strings.TrimSpace(getenv(EnvJina))
		// The reader endpoint is the operator's choice, not the model's:
		// it is reached without the guard (the target URL is still vetted).
		f.jina = remote.NewClient(remote.ClientConfig{Timeout: cfg.Timeout, Retries: cfg.Retries, Retry429: true, UserAgent: cfg.UserAgent})
	default:
		return nil, fmt.Errorf("unsupported visit backend %q (known: direct, jina)", cfg.Backend)
	}
	return f, nil
}

// Backend returns the backend name.
func (f *Fetcher) Backend() string { return f.cfg.Backend }

// Fetch retrieves rawURL and extracts its text. Refusals by the SSRF guard
// match ssrf.ErrRefused; non-2xx answers are *httpretry.StatusError; types it
// cannot read wrap remote.ErrUnsupported.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (Page, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return Page{}, fmt.Errorf("visit: bad URL: %w", err)
	}
	if err := f.cfg.Guard.CheckURL(ctx, u); err != nil {
		return Page{}, fmt.Errorf("visit %s: %w", redact.URL(u.String()), err)
	}
	if f.cfg.Backend == BackendJina {
		return f.viaJina(ctx, u)
	}
	r := f.client.R().SetContext(ctx).
		SetHeader("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := remote.Execute(r, http.MethodGet, u.String(), f.cfg.MaxBytes)
	if err != nil {
		return Page{}, fmt.Errorf("visit %s: %w", redact.URL(u.String()), err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		return Page{}, fmt.Errorf("visit %s: %w", redact.URL(u.String()), remote.StatusErrorFrom(resp, ""))
	}
	final := u
	if resp.URL != "" {
		if fu, perr := url.Parse(resp.URL); perr == nil {
			final = fu
		}
	}
	page := Page{URL: u.String(), FinalURL: final.String(), Bytes: len(resp.Body), Truncated: resp.Truncated}
	if err := convert(&page, resp.Header.Get("Content-Type"), resp.Body, final); err != nil {
		return Page{}, fmt.Errorf("visit %s: %w", redact.URL(u.String()), err)
	}
	return page, nil
}

// convert fills page.Text and page.ContentType from body.
func convert(page *Page, contentType string, body []byte, u *url.URL) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "" || mt == "application/octet-stream" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	page.ContentType = mt
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		title, md, err := ExtractHTML(body, u)
		if err != nil {
			return err
		}
		page.Title, page.Text = title, md
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		var buf bytes.Buffer
		if json.Indent(&buf, body, "", "  ") == nil {
			page.Text = buf.String()
		} else {
			page.Text = toUTF8(body)
		}
	case strings.HasPrefix(mt, "text/"), mt == "application/xml", strings.HasSuffix(mt, "+xml"):
		page.Text = toUTF8(body)
	case mt == "application/pdf":
		// No maintained pure-Go PDF text extractor is available to the
		// project (see README): say so rather than return garbage.
		return fmt.Errorf("%w content type %s: PDF text extraction is not available; look for an HTML version of this document", remote.ErrUnsupported, mt)
	default:
		return fmt.Errorf("%w content type %s", remote.ErrUnsupported, mt)
	}
	return nil
}

func toUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// viaJina asks Jina Reader (GET <JinaURL>/<url>) for the page as Markdown.
func (f *Fetcher) viaJina(ctx context.Context, u *url.URL) (Page, error) {
	r := f.jina.R().SetContext(ctx).SetHeader("Accept", "text/plain")
	if f.jinaKey != "" {
		r.SetAuthToken(f.jinaKey)
	}
	resp, err := remote.Execute(r, http.MethodGet, strings.TrimRight(f.cfg.JinaURL, "/")+"/"+u.String(), f.cfg.MaxBytes)
	if err != nil {
		return Page{}, fmt.Errorf("visit %s via jina: %w", redact.URL(u.String()), scrubErr(err, f.jinaKey))
	}
	if resp.Status < 200 || resp.Status > 299 {
		return Page{}, fmt.Errorf("visit %s via jina: %w", redact.URL(u.String()), remote.StatusErrorFrom(resp, strings.TrimSpace(string(resp.Body)), f.jinaKey))
	}
	text := toUTF8(resp.Body)
	page := Page{URL: u.String(), FinalURL: u.String(), ContentType: "text/markdown", Bytes: len(resp.Body), Truncated: resp.Truncated}
	// Jina Reader starts its answer with "Title: …" and "URL Source: …".
	for _, line := range strings.SplitN(text, "\n", 4) {
		if t, ok := strings.CutPrefix(line, "Title: "); ok {
			page.Title = strings.TrimSpace(t)
		}
	}
	page.Text = text
	return page, nil
}

func scrubErr(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return fmt.Errorf("%s: %w", redact.Secrets(err.Error(), key), remote.ErrConfig)
}
