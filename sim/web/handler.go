package web

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"html"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Limits of the HTTP API.
const (
	// MaxRequestBytes caps a search request body.
	MaxRequestBytes = 1 << 20
	// maxBatch caps the queries of one Serper batch request.
	maxBatch = 100
	// searxPageSize is the number of hits per SearXNG result page.
	searxPageSize = 10
)

// HandlerOption configures the handler returned by World.Handler.
type HandlerOption func(*handlerConfig)

type handlerConfig struct {
	apiKey string
}

// WithAPIKey makes the Serper-shaped POST /search require the header
// X-API-KEY to equal key; a missing or wrong key gets 403 as from Serper.
// Without this option any key, or none, is accepted.
func WithAPIKey(key string) HandlerOption {
	return func(c *handlerConfig) { c.apiKey = key }
}

// Handler serves the synthetic web over HTTP:
//
//	GET  /                      the list of sites
//	GET  /site/<slug>/…         the pages (404 page for unknown paths)
//	POST /search                Serper-shaped JSON search
//	GET  /search?q=…&format=json SearXNG-shaped JSON search (pageno supported)
//	GET  /search?q=…            an HTML results page
//
// Links in search results are absolute, built from the request's Host, so
// the same world works behind any address. The handler never panics on bad
// input and caps request bodies at MaxRequestBytes.
func (w *World) Handler(opts ...HandlerOption) http.Handler {
	var cfg handlerConfig
	for _, o := range opts {
		o(&cfg)
	}
	h := &handler{w: w, cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /search", h.serper)
	mux.HandleFunc("GET /search", h.searxng)
	mux.HandleFunc("GET /", h.page)
	return mux
}

type handler struct {
	w   *World
	cfg handlerConfig
}

// baseURL is the scheme and host the client used to reach the server.
func baseURL(r *http.Request) string {
	if r.Host == "" {
		return PlaceholderBaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *handler) page(rw http.ResponseWriter, r *http.Request) {
	p, ok := h.w.pages[r.URL.Path]
	if !ok {
		if _, dir := h.w.pages[r.URL.Path+"/"]; dir {
			http.Redirect(rw, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.WriteHeader(http.StatusNotFound)
		io.WriteString(rw, notFoundHTML)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(rw, p.html)
}

// apiError is the error body of both search APIs, shaped like Serper's.
type apiError struct {
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	rw.WriteHeader(status)
	enc := json.NewEncoder(rw)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // a write error means the client went away; nothing to do
}

func writeError(rw http.ResponseWriter, status int, msg string) {
	writeJSON(rw, status, apiError{Message: msg, StatusCode: status})
}

// serperQuery is one Serper request. Pointers tell absent fields from zero
// values; unknown fields (location, tbs, autocorrect, …) are ignored as
// Serper ignores what it does not use.
type serperQuery struct {
	Q    *string `json:"q"`
	GL   string  `json:"gl"`
	HL   string  `json:"hl"`
	Num  *int    `json:"num"`
	Page *int    `json:"page"`
}

type serperParams struct {
	Q      string `json:"q"`
	GL     string `json:"gl"`
	HL     string `json:"hl"`
	Num    int    `json:"num"`
	Page   int    `json:"page,omitempty"`
	Type   string `json:"type"`
	Engine string `json:"engine"`
}

type serperOrganic struct {
	Title    string `json:"title"`
	Link     string `json:"link"`
	Snippet  string `json:"snippet"`
	Position int    `json:"position"`
}

type serperResponse struct {
	SearchParameters serperParams    `json:"searchParameters"`
	Organic          []serperOrganic `json:"organic"`
	Credits          int             `json:"credits"`
}

// serper answers POST /search. A body holding a JSON array is a batch and
// gets an array of responses, as Serper does.
func (h *handler) serper(rw http.ResponseWriter, r *http.Request) {
	if k := h.cfg.apiKey; k != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("X-API-KEY")), []byte(k)) != 1 {
		writeError(rw, http.StatusForbidden, "Unauthorized.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxRequestBytes))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			writeError(rw, http.StatusRequestEntityTooLarge, "Request body too large.")
			return
		}
		writeError(rw, http.StatusBadRequest, "Could not read request body.")
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var qs []serperQuery
		if err := json.Unmarshal(body, &qs); err != nil {
			writeError(rw, http.StatusBadRequest, "Invalid JSON body: "+err.Error())
			return
		}
		if len(qs) == 0 || len(qs) > maxBatch {
			writeError(rw, http.StatusBadRequest, "A batch must hold 1 to "+strconv.Itoa(maxBatch)+" queries.")
			return
		}
		out := make([]serperResponse, len(qs))
		for i, q := range qs {
			if q.Q == nil || strings.TrimSpace(*q.Q) == "" {
				writeError(rw, http.StatusBadRequest, "Missing query parameter q.")
				return
			}
			out[i] = h.serperSearch(baseURL(r), q)
		}
		writeJSON(rw, http.StatusOK, out)
		return
	}
	var q serperQuery
	if err := json.Unmarshal(body, &q); err != nil {
		writeError(rw, http.StatusBadRequest, "Invalid JSON body: "+err.Error())
		return
	}
	if q.Q == nil || strings.TrimSpace(*q.Q) == "" {
		writeError(rw, http.StatusBadRequest, "Missing query parameter q.")
		return
	}
	writeJSON(rw, http.StatusOK, h.serperSearch(baseURL(r), q))
}

func (h *handler) serperSearch(base string, q serperQuery) serperResponse {
	p := serperParams{Q: *q.Q, GL: q.GL, HL: q.HL, Num: 10, Type: "search", Engine: "google"}
	if p.GL == "" {
		p.GL = "us"
	}
	if p.HL == "" {
		p.HL = "en"
	}
	if q.Num != nil {
		p.Num = min(max(*q.Num, 1), maxResults)
	}
	page := 1
	if q.Page != nil && *q.Page > 1 {
		page = min(*q.Page, 1000)
		p.Page = page
	}
	rs, _ := h.w.search(base, p.Q, (page-1)*p.Num, p.Num)
	organic := make([]serperOrganic, len(rs))
	for i, r := range rs {
		organic[i] = serperOrganic{Title: r.Title, Link: r.Link, Snippet: r.Snippet, Position: r.Position}
	}
	return serperResponse{SearchParameters: p, Organic: organic, Credits: 1}
}

type searxResult struct {
	URL       string   `json:"url"`
	Title     string   `json:"title"`
	Content   string   `json:"content"`
	Engine    string   `json:"engine"`
	Engines   []string `json:"engines"`
	Score     float64  `json:"score"`
	Category  string   `json:"category"`
	Positions []int    `json:"positions"`
}

type searxResponse struct {
	Query               string        `json:"query"`
	NumberOfResults     int           `json:"number_of_results"`
	Results             []searxResult `json:"results"`
	Answers             []string      `json:"answers"`
	Corrections         []string      `json:"corrections"`
	Infoboxes           []any         `json:"infoboxes"`
	Suggestions         []string      `json:"suggestions"`
	UnresponsiveEngines [][]string    `json:"unresponsive_engines"`
}

// searxng answers GET /search: SearXNG's JSON with format=json, an HTML
// results page without format (or with format=html).
func (h *handler) searxng(rw http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	format := v.Get("format")
	if format != "" && format != "json" && format != "html" {
		writeError(rw, http.StatusBadRequest, "Unsupported format "+strconv.Quote(format)+": use json or html.")
		return
	}
	q := strings.TrimSpace(v.Get("q"))
	if q == "" {
		if format == "json" {
			writeError(rw, http.StatusBadRequest, "Missing query parameter q.")
			return
		}
		writeResultsHTML(rw, "", nil)
		return
	}
	pageno := 1
	if s := v.Get("pageno"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeError(rw, http.StatusBadRequest, "Invalid pageno "+strconv.Quote(s)+": want an integer from 1 to 1000.")
			return
		}
		pageno = n
	}
	rs, total := h.w.search(baseURL(r), q, (pageno-1)*searxPageSize, searxPageSize)
	if format != "json" {
		writeResultsHTML(rw, q, rs)
		return
	}
	out := searxResponse{
		Query: q, NumberOfResults: total, Results: make([]searxResult, len(rs)),
		Answers: []string{}, Corrections: []string{}, Infoboxes: []any{},
		Suggestions: []string{}, UnresponsiveEngines: [][]string{},
	}
	for i, r := range rs {
		out.Results[i] = searxResult{
			URL: r.Link, Title: r.Title, Content: r.Snippet, Engine: "sim", Engines: []string{"sim"},
			Score: math.Round(r.Score*1e4) / 1e4, Category: "general", Positions: []int{r.Position},
		}
	}
	writeJSON(rw, http.StatusOK, out)
}

func writeResultsHTML(rw http.ResponseWriter, q string, rs []Result) {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
	b.WriteString(e(q) + " - Search</title>\n</head>\n<body>\n<form action=\"/search\" method=\"get\"><input name=\"q\" value=\"")
	b.WriteString(e(q) + "\"><button>Search</button></form>\n<ol class=\"results\">\n")
	for _, r := range rs {
		b.WriteString("<li><a href=\"" + e(r.Link) + "\">" + e(r.Title) + "</a><p>" + e(r.Snippet) + "</p></li>\n")
	}
	b.WriteString("</ol>\n</body>\n</html>\n")
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(rw, b.String())
}
