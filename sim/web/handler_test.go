package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// serve runs one request through h with the Host "web.sim", so absolute
// links in responses are stable across runs.
func serve(h http.Handler, method, target, body string, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = "web.sim"
	for k, v := range header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestHandlerGolden(t *testing.T) {
	w := MustWorld(t)
	q := w.Questions[0]
	query := q.Chain.Entity + " " + q.Chain.Relations[0]
	tests := []struct {
		name, method, target, body, golden string
	}{
		{"serper", "POST", "/search", `{"q":"` + query + `","num":3}`, "serper.json"},
		{"serper batch", "POST", "/search", `[{"q":"` + query + `","num":2},{"q":"` + query + `","num":2,"page":2,"gl":"de","hl":"de"}]`, "serper_batch.json"},
		{"searxng", "GET", "/search?format=json&q=" + strings.ReplaceAll(query, " ", "+"), "", "searxng.json"},
		{"searxng page 2", "GET", "/search?format=json&pageno=2&q=" + strings.ReplaceAll(query, " ", "+"), "", "searxng_page2.json"},
	}
	h := w.Handler()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(h, tt.method, tt.target, tt.body, map[string]string{"X-API-KEY": "anything"})
			if got, want := rec.Code, http.StatusOK; got != want {
				t.Fatalf("status %d, want %d: %s", got, want, rec.Body)
			}
			if got, want := rec.Header().Get("Content-Type"), "application/json; charset=utf-8"; got != want {
				t.Errorf("Content-Type %q, want %q", got, want)
			}
			golden(t, tt.golden, rec.Body.Bytes())
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	w := MustWorld(t)
	open, locked := w.Handler(), w.Handler(WithAPIKey("s3cret"))
	tests := []struct {
		name       string
		h          http.Handler
		method     string
		target     string
		body       string
		key        string
		wantStatus int
		wantBody   string // substring
	}{
		{"bad JSON", open, "POST", "/search", `{"q":`, "", 400, `"statusCode":400`},
		{"q of wrong type", open, "POST", "/search", `{"q":5}`, "", 400, "Invalid JSON"},
		{"missing q", open, "POST", "/search", `{"num":3}`, "", 400, "Missing query parameter q"},
		{"empty q", open, "POST", "/search", `{"q":"  "}`, "", 400, "Missing query parameter q"},
		{"empty body", open, "POST", "/search", ``, "", 400, "Invalid JSON"},
		{"empty batch", open, "POST", "/search", `[]`, "", 400, "batch"},
		{"batch missing q", open, "POST", "/search", `[{"q":"a"},{}]`, "", 400, "Missing query parameter q"},
		{"body too large", open, "POST", "/search", `{"q":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, "", 413, "too large"},
		{"no key needed", open, "POST", "/search", `{"q":"city"}`, "", 200, `"organic"`},
		{"wrong key", locked, "POST", "/search", `{"q":"city"}`, "nope", 403, `{"message":"Unauthorized.","statusCode":403}`},
		{"missing key", locked, "POST", "/search", `{"q":"city"}`, "", 403, `"Unauthorized."`},
		{"right key", locked, "POST", "/search", `{"q":"city"}`, "s3cret", 200, `"credits":1`},
		{"searxng missing q", open, "GET", "/search?format=json", "", "", 400, "Missing query parameter q"},
		{"searxng bad pageno", open, "GET", "/search?format=json&q=city&pageno=x", "", "", 400, "pageno"},
		{"searxng zero pageno", open, "GET", "/search?format=json&q=city&pageno=0", "", "", 400, "pageno"},
		{"searxng bad format", open, "GET", "/search?format=rss&q=city", "", "", 400, "format"},
		{"searxng far page", open, "GET", "/search?format=json&q=city&pageno=999", "", "", 200, `"results":[]`},
		{"html results", open, "GET", "/search?q=city", "", "", 200, "<ol class=\"results\">"},
		{"html form", open, "GET", "/search", "", "", 200, "<form"},
		{"html escapes query", open, "GET", "/search?q=%3Cscript%3E", "", "", 200, "&lt;script&gt;"},
		{"unknown page", open, "GET", "/site/nowhere/x.html", "", "", 404, "Page not found"},
		{"index", open, "GET", "/", "", "", 200, w.sites[0].root},
		{"site root", open, "GET", w.sites[0].root, "", "", 200, "<nav class=\"main-nav\">"},
		{"site root without slash", open, "GET", strings.TrimSuffix(w.sites[0].root, "/"), "", "", 301, ""},
		{"wrong method", open, "DELETE", "/search", "", "", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.key != "" {
				hdr["X-API-KEY"] = tt.key
			}
			rec := serve(tt.h, tt.method, tt.target, tt.body, hdr)
			if got, want := rec.Code, tt.wantStatus; got != want {
				t.Errorf("status %d, want %d: %.300s", got, want, rec.Body)
			}
			if got := rec.Body.String(); !strings.Contains(got, tt.wantBody) {
				t.Errorf("body %.300q lacks %q", got, tt.wantBody)
			}
			if tt.wantStatus >= 400 && tt.wantStatus != 404 && tt.wantStatus != 405 {
				var e apiError
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.StatusCode != tt.wantStatus || e.Message == "" {
					t.Errorf("error body %q: want JSON {message, statusCode: %d} (%v)", rec.Body, tt.wantStatus, err)
				}
			}
		})
	}
}

// TestHandlerLinksFollowHost checks that search links are built from the
// Host the client used, and that they resolve on a live server.
func TestHandlerLinksFollowHost(t *testing.T) {
	w := MustWorld(t)
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/search", "application/json", strings.NewReader(`{"q":"`+w.Questions[0].Chain.Entity+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out serperResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Organic) == 0 {
		t.Fatal("no results")
	}
	link := out.Organic[0].Link
	if !strings.HasPrefix(link, srv.URL+"/site/") {
		t.Fatalf("link %q does not start with %s/site/", link, srv.URL)
	}
	page, err := srv.Client().Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if got, want := page.StatusCode, 200; got != want || !strings.Contains(string(body), "<article") {
		t.Errorf("GET %s: status %d, want %d with an article", link, got, want)
	}
}

func FuzzSerper(f *testing.F) {
	h := MustWorld(f).Handler()
	f.Add(`{"q":"Velmora Labs founder","num":5,"page":2}`)
	f.Add(`[{"q":"a"},{"q":"b","num":-4}]`)
	f.Add(`{"q":"x","num":99999999999}`)
	f.Add(`nul`)
	f.Fuzz(func(t *testing.T, body string) {
		rec := serve(h, "POST", "/search", body, nil)
		if rec.Code != 200 && rec.Code != 400 && rec.Code != 413 {
			t.Errorf("status %d for body %q", rec.Code, body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("invalid JSON response for body %q", body)
		}
	})
}
