package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var hrefPattern = regexp.MustCompile(`<a href="(/[^"]*)"`)

// crawl follows <a href> links breadth-first from root over the served
// HTML, staying under prefix, and returns the depth of every page reached.
func crawl(t *testing.T, srv *httptest.Server, root, prefix string) map[string]int {
	t.Helper()
	depth := map[string]int{root: 0}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		resp, err := srv.Client().Get(srv.URL + p)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200 (linked from the site)", p, resp.StatusCode)
			continue
		}
		for _, m := range hrefPattern.FindAllStringSubmatch(string(body), -1) {
			next := m[1]
			if _, seen := depth[next]; !seen && strings.HasPrefix(next, prefix) {
				depth[next] = depth[p] + 1
				queue = append(queue, next)
			}
		}
	}
	return depth
}

// TestQuestionsSolvable walks every question hop by hop: the hop's fact
// must be stated, parseably, on its evidence page, the next hop must start
// from its object, and the evidence page must be reachable by links from
// its own site's root (and from the question's root, through the web's
// index).
func TestQuestionsSolvable(t *testing.T) {
	w := MustWorld(t)
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	reach := make(map[string]map[string]int)
	for _, s := range w.sites {
		reach[s.root] = crawl(t, srv, s.root, s.root)
	}
	everything := crawl(t, srv, w.Questions[0].RootPath, "/")
	for _, q := range w.Questions {
		subject := q.Chain.Entity
		if e := w.byName[subject]; e == nil || e.distractor {
			t.Errorf("%s: chain starts at %q, not a real entity", q.ID, subject)
		}
		if got, want := q.Question, QuestionText(q.Chain); got != want {
			t.Errorf("%s: question %q, want %q", q.ID, got, want)
		}
		if got, want := q.Hops, len(q.Chain.Relations); got != want || got < 1 || got > 3 {
			t.Errorf("%s: hops %d, want %d in 1..3", q.ID, got, want)
		}
		if got, want := q.Difficulty, difficulties[q.Hops]; got != want {
			t.Errorf("%s: difficulty %q, want %q", q.ID, got, want)
		}
		singleSite := true
		for i, rel := range q.Chain.Relations {
			path := q.EvidencePaths[i]
			text, ok := w.PageText(path)
			if !ok {
				t.Fatalf("%s hop %d: no page %s", q.ID, i+1, path)
			}
			var object string
			for _, f := range ParseFacts(text) {
				if f.Subject == subject && f.Relation == rel {
					object = f.Object
				}
			}
			if object == "" {
				t.Errorf("%s hop %d: %s does not state the %s of %s", q.ID, i+1, path, rel, subject)
				break
			}
			if i < len(q.Chain.Relations)-1 {
				if e := w.byName[object]; e == nil || e.distractor {
					t.Errorf("%s hop %d: chain passes through %q, not a real entity", q.ID, i+1, object)
				}
			} else if object != q.Answer {
				t.Errorf("%s: chain ends at %q, answer is %q", q.ID, object, q.Answer)
			}
			siteRoot := path[:strings.Index(path[len("/site/"):], "/")+len("/site/")+1]
			if _, ok := reach[siteRoot][path]; !ok {
				t.Errorf("%s hop %d: %s not reachable from %s", q.ID, i+1, path, siteRoot)
			}
			if _, ok := everything[path]; !ok {
				t.Errorf("%s hop %d: %s not reachable from %s", q.ID, i+1, path, q.RootPath)
			}
			if got, want := strings.Count(q.GoldenPaths[i], "->"), reach[siteRoot][path]; got < want {
				t.Errorf("%s hop %d: golden path %q shorter than the %d clicks needed", q.ID, i+1, q.GoldenPaths[i], want)
			}
			singleSite = singleSite && strings.HasPrefix(path, q.RootPath)
			subject = object
		}
		if got, want := q.Type == "single_source", singleSite; got != want {
			t.Errorf("%s: type %q but all evidence on the root site is %v", q.ID, q.Type, want)
		}
	}
}

func TestQuestionsDistinctAndVaried(t *testing.T) {
	w := MustWorld(t)
	seen := make(map[string]bool)
	var hops [4]int
	types := make(map[string]int)
	for i, q := range w.Questions {
		if seen[q.Question] {
			t.Errorf("duplicate question %q", q.Question)
		}
		seen[q.Question] = true
		if got, want := q.ID, "sim-7-"+strconv.Itoa(i+1); got != want {
			t.Errorf("question %d: ID %q, want %q", i, got, want)
		}
		hops[q.Hops]++
		types[q.Type]++
	}
	for h := 1; h <= 3; h++ {
		if hops[h] == 0 {
			t.Errorf("no %d-hop questions among %d", h, len(w.Questions))
		}
	}
	for _, typ := range []string{"single_source", "multi_source"} {
		if types[typ] == 0 {
			t.Errorf("no %s questions", typ)
		}
	}
	depths := make(map[int]bool)
	for _, q := range w.Questions {
		for _, g := range q.GoldenPaths {
			depths[strings.Count(g, "->")] = true
		}
	}
	if !slices.Equal(sortedKeys(depths), []int{2, 3}) {
		t.Errorf("golden path depths %v, want evidence at 2 and 3 clicks", sortedKeys(depths))
	}
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
