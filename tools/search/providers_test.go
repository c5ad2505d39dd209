package search

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
)

func decodeBody(r *http.Request, rec *recorder, v any) {
	b, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(b, v) != nil {
		rec.problem(fmt.Sprintf("body %q is not the expected JSON", b))
	}
}

func serperFake(sc scenario, rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" {
			rec.problem(r.Method + " " + r.URL.Path)
		}
		if r.Header.Get("X-API-KEY") != testKey {
			rec.problem("missing X-API-KEY")
		}
		var q serperRequest
		decodeBody(r, rec, &q)
		rec.note(map[string]string{"q": q.Q, "gl": q.GL, "hl": q.HL, "num": strconv.Itoa(q.Num)})
		if common(w, sc, http.StatusForbidden, `{"message":"Unauthorized.","statusCode":403}`, `{"message":"Too many requests.","statusCode":429}`) {
			return
		}
		organic := []map[string]any{}
		if sc == scOK {
			for i, f := range fixture {
				organic = append(organic, map[string]any{"title": f.Title, "link": f.Link, "snippet": f.Snippet, "position": i + 1})
			}
		}
		b, _ := json.Marshal(map[string]any{
			"searchParameters": map[string]any{"q": q.Q, "gl": q.GL, "hl": q.HL, "num": q.Num, "type": "search", "engine": "google"},
			"organic":          organic,
			"peopleAlsoAsk":    []any{},
			"relatedSearches":  []map[string]string{{"query": "alpha labs history"}},
			"credits":          1,
		})
		writeRaw(w, http.StatusOK, "application/json", string(b))
	})
}

func searxngFake(sc scenario, rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" || r.URL.Query().Get("q") == "" {
			rec.problem(r.Method + " " + r.URL.String())
		}
		rec.note(map[string]string{"q": r.URL.Query().Get("q")})
		switch sc {
		case scAuth:
			// SearXNG answers 403 with an HTML page when json is disabled.
			writeRaw(w, http.StatusForbidden, "text/html", "<html><body><h1>403 Forbidden</h1></body></html>")
			return
		case scLimited:
			w.Header().Set("Retry-After", "7")
			writeRaw(w, http.StatusTooManyRequests, "text/plain", "Too Many Requests")
			return
		}
		if common(w, sc, 0, "", "") {
			return
		}
		results := []map[string]any{}
		if sc == scOK {
			for i, f := range fixture {
				results = append(results, map[string]any{
					"url": f.Link, "title": f.Title, "content": f.Snippet, "engine": "duckduckgo",
					"parsed_url": []string{"https", "x", "/", "", "", ""}, "template": "default.html",
					"engines": []string{"duckduckgo", "brave"}, "positions": []int{i + 1}, "score": 2.0 / float64(i+1), "category": "general",
				})
			}
		}
		b, _ := json.Marshal(map[string]any{
			"query": r.URL.Query().Get("q"), "number_of_results": 0, "results": results,
			"answers": []any{}, "corrections": []any{}, "infoboxes": []any{}, "suggestions": []string{"alpha"},
			"unresponsive_engines": [][]string{{"google", "timeout"}},
		})
		writeRaw(w, http.StatusOK, "application/json", string(b))
	})
}

func braveFake(sc scenario, rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" || r.URL.Query().Get("q") == "" || r.URL.Query().Get("count") != "2" {
			rec.problem(r.Method + " " + r.URL.String())
		}
		if r.Header.Get("X-Subscription-Token") != testKey {
			rec.problem("missing X-Subscription-Token")
		}
		rec.note(map[string]string{"q": r.URL.Query().Get("q")})
		braveErr := func(status int, code, detail string) string {
			b, _ := json.Marshal(map[string]any{"type": "ErrorResponse", "time": 1700000000,
				"error": map[string]any{"id": "c1f1e0c6", "status": status, "code": code, "detail": detail, "meta": map[string]any{"plan": "Free"}}})
			return string(b)
		}
		if common(w, sc, http.StatusUnauthorized,
			braveErr(401, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid."),
			braveErr(429, "RATE_LIMITED", "Request rate limit exceeded for plan.")) {
			return
		}
		results := []map[string]any{}
		if sc == scOK {
			for _, f := range fixture {
				// Brave marks query matches with <strong>.
				desc := f.Snippet
				if f.Title == "Alpha Labs" {
					desc = "<strong>Alpha Labs</strong> was <strong>founded</strong> in 1999."
				}
				results = append(results, map[string]any{"title": f.Title, "url": f.Link, "description": desc, "type": "search_result", "language": "en"})
			}
		}
		b, _ := json.Marshal(map[string]any{"type": "search", "query": map[string]any{"original": r.URL.Query().Get("q")},
			"web": map[string]any{"type": "search", "results": results, "family_friendly": true}})
		writeRaw(w, http.StatusOK, "application/json", string(b))
	})
}

func tavilyFake(sc scenario, rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/search" {
			rec.problem(r.Method + " " + r.URL.Path)
		}
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			rec.problem("missing bearer key")
		}
		var q tavilyRequest
		decodeBody(r, rec, &q)
		if q.Query == "" || q.MaxResults != 2 {
			rec.problem(fmt.Sprintf("request %+v", q))
		}
		rec.note(map[string]string{"q": q.Query})
		if common(w, sc, http.StatusUnauthorized,
			`{"detail":{"error":"Unauthorized: missing or invalid API key."}}`,
			`{"detail":{"error":"Rate limit exceeded. Please wait before making more requests."}}`) {
			return
		}
		results := []map[string]any{}
		if sc == scOK {
			for i, f := range fixture {
				results = append(results, map[string]any{"title": f.Title, "url": f.Link, "content": f.Snippet, "score": 0.9 - 0.1*float64(i), "raw_content": nil})
			}
		}
		b, _ := json.Marshal(map[string]any{"query": q.Query, "answer": nil, "images": []any{}, "follow_up_questions": nil, "results": results, "response_time": 1.07})
		writeRaw(w, http.StatusOK, "application/json", string(b))
	})
}

func retrieverFake(sc scenario, rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/retrieve" {
			rec.problem(r.Method + " " + r.URL.Path)
		}
		var q RetrieveRequest
		decodeBody(r, rec, &q)
		if len(q.Queries) != 1 || q.TopK != 2 || !q.ReturnScores {
			rec.problem(fmt.Sprintf("request %+v", q))
		}
		rec.note(nil)
		if common(w, sc, http.StatusUnprocessableEntity,
			`{"detail":[{"loc":["body","queries"],"msg":"field required","type":"value_error.missing"}]}`,
			`{"detail":"busy"}`) {
			return
		}
		hits := []map[string]any{}
		if sc == scOK {
			for i, f := range fixture[:q.TopK] {
				hits = append(hits, map[string]any{"document": map[string]any{"id": strconv.Itoa(i), "contents": `"` + f.Title + `"` + "\n" + f.Snippet}, "score": 10.0 - float64(i)})
			}
		}
		b, _ := json.Marshal(map[string]any{"result": [][]map[string]any{hits}})
		writeRaw(w, http.StatusOK, "application/json", string(b))
	})
}

func TestProviders(t *testing.T) {
	fakes := []fakeProvider{
		{name: "serper", authCode: 403, handler: serperFake, needsKey: true, errorText: "Unauthorized."},
		{name: "searxng", authCode: 403, handler: searxngFake, errorText: "403 Forbidden"},
		{name: "brave", authCode: 401, handler: braveFake, needsKey: true, errorText: "SUBSCRIPTION_TOKEN_INVALID"},
		{name: "tavily", authCode: 401, handler: tavilyFake, needsKey: true, errorText: "invalid API key"},
		{name: "retriever", authCode: 422, handler: retrieverFake, errorText: "field required"},
	}
	covered := map[string]bool{"local": true} // local_test.go runs the local index
	for _, fp := range fakes {
		covered[fp.name] = true
		runConformance(t, fp)
	}
	for _, name := range Names() {
		if !covered[name] {
			t.Errorf("provider %q is registered but has no conformance case: add a fake to TestProviders", name)
		}
	}
}

func TestRetrieverResultLinksAreIDs(t *testing.T) {
	got, err := DecodeRetrieve([]byte(`{"result":[[{"document":{"id":"42","contents":"\"Paris\"\nParis is the capital of France."},"score":3.5}],[]]}`), 5)
	if err != nil || len(got) != 1 {
		t.Fatalf("DecodeRetrieve = %v, %v", got, err)
	}
	want := Result{Title: "Paris", Link: "42", Snippet: "Paris is the capital of France."}
	if got[0] != want {
		t.Errorf("got %+v, want %+v", got[0], want)
	}
	// Unscored layout (return_scores false).
	got, err = DecodeRetrieve([]byte(`{"result":[[{"id":"7","contents":"\"Rome\"\nRome."}]]}`), 5)
	if err != nil || len(got) != 1 || got[0].Title != "Rome" || got[0].Link != "7" {
		t.Errorf("unscored: %v, %v", got, err)
	}
}
