package llm

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
)

// BenchmarkTokenPath runs the same executor trajectories on the
// zero-latency sim two ways, side by side in one process: the messages
// path (every turn re-sends the conversation to the chat route) and the
// token path (every later turn renders only the new messages and
// generates from the ids). It reports per turn the process's CPU (the
// client and the in-process sim both: the sim's share differs between the
// paths, as the token path asks it two things a turn), the HTTP requests,
// and the share of the previous prompt and completion each follow-up
// prompt starts with. Compare the two sub-benchmarks' cpu-ns/turn
// (-count 5, medians).
func BenchmarkTokenPath(b *testing.B) {
	for _, path := range []string{"messages", "tokens"} {
		b.Run("path="+path, func(b *testing.B) {
			var requests atomic.Int64
			s := mustSim(b, simConfig(DialectVLLM, 3), func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					requests.Add(1)
					h.ServeHTTP(w, r)
				})
			})
			c := mustClient(b, Config{Role: "executor", Dialect: DialectVLLM, Endpoints: []string{s.ts.URL}, CaptureTokens: true})
			w := mustWorld(b)
			ctx := context.Background()
			// Warm the connection and the token path's probe cache.
			if _, _, err := runTokenTrajectory(ctx, c, w, w.Questions[0].Question, "warm", 6, 1); err != nil {
				b.Fatal(err)
			}
			requests.Store(0)
			turns, reused, prevLen := 0, 0, 0
			cpu := startCPU(b)
			for i := range b.N {
				q := w.Questions[i%len(w.Questions)].Question
				key := fmt.Sprint("q", i)
				var ts []*Turn
				var err error
				if path == "tokens" {
					ts, _, err = runTokenTrajectory(ctx, c, w, q, key, 6, int64(20+i))
				} else {
					ts, err = runTrajectory(ctx, c, w, q, key, 6, int64(20+i))
				}
				if err != nil {
					b.Fatal(err)
				}
				turns += len(ts)
				for k := 1; k < len(ts); k++ {
					prev := len(ts[k-1].PromptIDs) + len(ts[k-1].CompletionIDs)
					prevLen += prev
					reused += commonPrefix(append(ts[k-1].PromptIDs[:len(ts[k-1].PromptIDs):len(ts[k-1].PromptIDs)], ts[k-1].CompletionIDs...), ts[k].PromptIDs)
				}
			}
			b.StopTimer()
			if turns == 0 {
				b.Fatal("no turns")
			}
			elapsed := processCPU(b) - cpu.start
			b.ReportMetric(float64(elapsed)/float64(turns), "cpu-ns/turn")
			b.ReportMetric(float64(requests.Load())/float64(turns), "http/turn")
			b.ReportMetric(float64(turns)/float64(b.N), "turns/op")
			if prevLen > 0 {
				b.ReportMetric(100*float64(reused)/float64(prevLen), "%reused")
			}
		})
	}
}
