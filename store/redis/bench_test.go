package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// BenchmarkClaimComplete claims and completes tasks (one op: one task),
// Max tasks per Claim, from one goroutine or from eight.
func BenchmarkClaimComplete(b *testing.B) {
	raw := testURL(b)
	for _, c := range []struct {
		name          string
		max, claimers int
	}{{"max1", 1, 1}, {"max16", 16, 1}, {"max1-8claimers", 1, 8}} {
		b.Run(c.name, func(b *testing.B) {
			s := mustOpen(b, freshURL(b, raw))
			defer s.Close()
			ctx := context.Background()
			if err := s.Enqueue(ctx, "r", benchTasks(b.N)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			errc := make(chan error, c.claimers)
			for w := range c.claimers {
				wg.Go(func() {
					req := store.ClaimRequest{Run: "r", Worker: fmt.Sprint("w", w), Max: c.max, Lease: time.Minute}
					for {
						leases, err := s.Claim(ctx, req)
						if err != nil {
							errc <- err
							return
						}
						if len(leases) == 0 {
							return
						}
						for _, l := range leases {
							if err := s.Complete(ctx, l); err != nil {
								errc <- err
								return
							}
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(errc)
			for err := range errc {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// benchTasks returns n tasks of one step, 8 rollouts a query.
func benchTasks(n int) []rollout.RolloutTask {
	out := make([]rollout.RolloutTask, n)
	for i := range out {
		out[i] = rollout.RolloutTask{Run: "r", Step: 1, QueryID: fmt.Sprintf("query-%06d", i/8), K: i % 8,
			Seed: rollout.RolloutSeed(7, 1, fmt.Sprint(i/8), i%8), PolicyVersion: 12}
	}
	return out
}

// BenchmarkStepStats512 writes and reads the statistics of a 512-query
// step, 8 main and 64 sub rewards a query (the goal: well under a second).
func BenchmarkStepStats512(b *testing.B) {
	raw := testURL(b)
	s := mustOpen(b, freshURL(b, raw))
	defer s.Close()
	ctx := context.Background()
	stats := benchStats(512, 8, 64)
	b.Run("put", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.PutStats(ctx, "r", 1, stats); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got, err := s.StepStats(ctx, "r", 1); err != nil || len(got) != len(stats) {
				b.Fatalf("StepStats = %d stats, %v", len(got), err)
			}
		}
	})
	b.Run("put+get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.PutStats(ctx, "r", 2, stats); err != nil {
				b.Fatal(err)
			}
			if _, err := s.StepStats(ctx, "r", 2); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchStats returns the statistics of queries queries with k main and
// sub sub rewards each, rewards with full float64 precision.
func benchStats(queries, k, sub int) []rollout.QueryStats {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]rollout.QueryStats, queries)
	for i := range out {
		q := rollout.QueryStats{QueryID: fmt.Sprintf("query-%06d", i), MainRewards: make([]float64, k),
			D: make([]int, k), DBar: sub / k, SubRewards: make([]float64, sub)}
		for j := range q.MainRewards {
			q.MainRewards[j] = rng.Float64()
			q.D[j] = rng.IntN(2 * q.DBar)
		}
		for j := range q.SubRewards {
			q.SubRewards[j] = rng.Float64()
		}
		q.MainMean, q.MainStd, q.SubMean, q.SubStd = rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
		out[i] = q
	}
	return out
}
