package oneshot

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// Web is a Serper-shaped search (POST /search with X-API-KEY and a JSON body
// {q, gl, hl, num}, answered with searchParameters, organic results and
// credits) and the pages its results link to (GET /page/ITEM/N, HTML of
// about 4 KB; page 0 of an item states its registry code).
type Web struct {
	// URL is the web's own base URL, written into result links.
	URL   string
	Hooks Hooks

	searches, visits atomic.Int64
}

// Searches and Visits count the requests answered.
func (w *Web) Searches() int64 { return w.searches.Load() }

// Visits counts the pages served.
func (w *Web) Visits() int64 { return w.visits.Load() }

// ServeHTTP implements http.Handler.
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if w.Hooks.Request != nil {
		w.Hooks.Request()
	}
	if w.Hooks.Answer != nil {
		defer w.Hooks.Answer()
	}
	switch {
	case r.URL.Path == "/search" && r.Method == http.MethodPost:
		w.search(rw, r)
	case strings.HasPrefix(r.URL.Path, "/page/"):
		w.page(rw, r)
	default:
		http.NotFound(rw, r)
	}
}

func (w *Web) search(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-KEY") == "" {
		http.Error(rw, `{"message":"Unauthorized.","statusCode":403}`, http.StatusForbidden)
		return
	}
	var q struct {
		Q   string `json:"q"`
		GL  string `json:"gl"`
		HL  string `json:"hl"`
		Num int    `json:"num"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &q)
	}
	if err != nil {
		http.Error(rw, `{"message":"Bad request.","statusCode":400}`, http.StatusBadRequest)
		return
	}
	if q.Num <= 0 || q.Num > 10 {
		q.Num = 10
	}
	item := itemOf(q.Q)
	b := []byte(`{"searchParameters":{"q":`)
	b = appendQuoted(b, q.Q)
	b = append(b, `,"gl":`...)
	b = appendQuoted(b, q.GL)
	b = append(b, `,"hl":`...)
	b = appendQuoted(b, q.HL)
	b = append(b, `,"num":`...)
	b = strconv.AppendInt(b, int64(q.Num), 10)
	b = append(b, `,"type":"search","engine":"google"},"organic":[`...)
	for i := 0; i < q.Num; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"title":`...)
		b = appendQuoted(b, fmt.Sprintf("Item %d, national catalogue of instruments: entry %d", item, i))
		b = append(b, `,"link":`...)
		b = appendQuoted(b, pageURL(w.URL, item, i))
		b = append(b, `,"snippet":`...)
		b = appendQuoted(b, fmt.Sprintf("The national catalogue lists item %d with its maker, its date and its registry code; entry %d of the %s.", item, i, filler(item+i, 14)))
		b = append(b, `,"position":`...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, '}')
	}
	b = append(b, `],"credits":1}`...)
	w.searches.Add(1)
	writeJSON(rw, b)
}

// pageURL is the link of result n of item's search.
func pageURL(base string, item, n int) string { return fmt.Sprintf("%s/page/%d/%d", base, item, n) }

func (w *Web) page(rw http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/page/"), "/")
	if len(parts) != 2 {
		http.NotFound(rw, r)
		return
	}
	item, err1 := strconv.Atoi(parts[0])
	n, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		http.NotFound(rw, r)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Item %d: catalogue entry %d</title></head>\n<body>\n", item, n)
	b.WriteString("<nav><a href=\"/\">Home</a> | <a href=\"/search\">Search</a> | <a href=\"/about\">About the catalogue</a></nav>\n")
	fmt.Fprintf(&b, "<article>\n<h1>Item %d</h1>\n", item)
	for p := 0; p < 6; p++ {
		fmt.Fprintf(&b, "<p>%s</p>\n", filler(item*7+n*3+p, 90))
		if p == 2 && n == 0 {
			fmt.Fprintf(&b, "<p>The registry code of item %d is %s, assigned when it entered the catalogue.</p>\n", item, code(item))
		}
	}
	b.WriteString("</article>\n<footer>National catalogue of instruments. All entries are checked by the registry.</footer>\n</body></html>\n")
	w.visits.Add(1)
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(rw, b.String())
}
