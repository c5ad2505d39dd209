package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCorpusEndToEnd generates a corpus (MGRPO_CORPUS_DOCS documents,
// default 100000), builds its index, then measures in-process query latency
// and the /retrieve request rate of `corpus serve`'s handler. It runs only
// when selected with -bench (go test ./tools/corpus -run '^$' -bench
// CorpusEndToEnd -benchtime 1x) and reports build_s, docs/s, p50_ms,
// p99_ms and retrieve_req/s.
func BenchmarkCorpusEndToEnd(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("MGRPO_CORPUS_DOCS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	in := filepath.Join(dir, "corpus.jsonl")
	f, err := os.Create(in)
	if err != nil {
		b.Fatal(err)
	}
	if err := GenerateJSONL(f, n, 7, true); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(dir, fmt.Sprintf("ix%d", i))
		start := time.Now()
		st, err := Build(context.Background(), BuildConfig{In: in, Out: out})
		if err != nil || st.Docs != int64(n) {
			b.Fatalf("build: %+v %v", st, err)
		}
		build := time.Since(start)
		b.ReportMetric(build.Seconds(), "build_s")
		b.ReportMetric(float64(n)/build.Seconds(), "docs/s")

		ix, err := Open(out)
		if err != nil {
			b.Fatal(err)
		}
		queries := benchQueries(in, 2000)
		lat := make([]time.Duration, 0, len(queries))
		for _, q := range queries {
			t0 := time.Now()
			if _, err := ix.Search(context.Background(), q, 3); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")

		srv := httptest.NewServer(Handler(ix, 3))
		var done atomic.Int64
		const workers = 32
		deadline := time.Now().Add(5 * time.Second)
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &http.Client{}
				for k := w; time.Now().Before(deadline); k += workers {
					body, _ := json.Marshal(map[string]any{"queries": []string{queries[k%len(queries)]}, "topk": 3, "return_scores": true})
					resp, err := c.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(string(body)))
					if err != nil {
						return
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						done.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(done.Load())/time.Since(t0).Seconds(), "retrieve_req/s")
		srv.Close()
		ix.Close()
	}
}

// benchQueries draws query strings from document titles and text.
func benchQueries(path string, n int) []string {
	f, _ := os.ReadFile(path)
	lines := strings.Split(string(f), "\n")
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]string, 0, n)
	for len(out) < n {
		d, err := ParseLine([]byte(lines[rng.IntN(len(lines))]))
		if err != nil {
			continue
		}
		words := strings.Fields(d.Text)
		k := rng.IntN(max(len(words)-3, 1))
		out = append(out, strings.Join(words[k:min(k+3, len(words))], " "))
	}
	return out
}
