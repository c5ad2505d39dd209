package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/storetest"
)

// BenchmarkClaimComplete claims tasks and completes each, one task an op:
// single claims one task a call, batch=32 32. tasks/s is the queue's
// throughput for one worker goroutine.
func BenchmarkClaimComplete(b *testing.B) {
	for _, batch := range []int{1, 32} {
		name := "single"
		if batch > 1 {
			name = fmt.Sprintf("batch=%d", batch)
		}
		b.Run(name, func(b *testing.B) {
			s := MustOpen(b, tempPath(b))
			ctx := context.Background()
			tasks := storetest.Tasks("r", b.N)
			for i := 0; i < len(tasks); i += 10000 {
				if err := s.Enqueue(ctx, "r", tasks[i:min(i+10000, len(tasks))]); err != nil {
					b.Fatal(err)
				}
			}
			req := store.ClaimRequest{Run: "r", Worker: "w", Max: batch, Lease: time.Minute}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				leases, err := s.Claim(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if len(leases) == 0 {
					b.Fatalf("queue empty after %d of %d tasks", done, b.N)
				}
				for _, l := range leases {
					if err := s.Complete(ctx, l); err != nil {
						b.Fatal(err)
					}
				}
				done += len(leases)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// stepStats returns the statistics of a 512-query step of K = 8 with 64
// aligned executor entries a query: 4,096 main and 32,768 sub rewards.
func stepStats() []rollout.QueryStats {
	out := make([]rollout.QueryStats, 512)
	for i := range out {
		q := rollout.QueryStats{QueryID: fmt.Sprintf("gaia-%04d", i), MainRewards: make([]float64, 8), D: make([]int, 8), DBar: 8,
			SubRewards: make([]float64, 64), MainMean: 0.5, MainStd: 0.3, SubMean: 0.4, SubStd: 0.2}
		for k := range q.MainRewards {
			q.MainRewards[k] = float64((i+k)%10) / 10
			q.D[k] = (i + k) % 12
		}
		for j := range q.SubRewards {
			q.SubRewards[j] = float64((i*j)%100) / 100
		}
		out[i] = q
	}
	return out
}

// BenchmarkStepStats512 writes and reads the statistics of a 512-query
// step (one op: one step's PutStats, StepStats, or both).
func BenchmarkStepStats512(b *testing.B) {
	stats := stepStats()
	ctx := context.Background()
	b.Run("write", func(b *testing.B) {
		s := MustOpen(b, tempPath(b))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := s.PutStats(ctx, "r", i, stats); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		s := MustOpen(b, tempPath(b))
		if err := s.PutStats(ctx, "r", 1, stats); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			got, err := s.StepStats(ctx, "r", 1)
			if err != nil || len(got) != len(stats) {
				b.Fatalf("StepStats = %d queries, %v", len(got), err)
			}
		}
	})
	b.Run("write+read", func(b *testing.B) {
		s := MustOpen(b, tempPath(b))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := s.PutStats(ctx, "r", i, stats); err != nil {
				b.Fatal(err)
			}
			got, err := s.StepStats(ctx, "r", i)
			if err != nil || len(got) != len(stats) {
				b.Fatalf("StepStats = %d queries, %v", len(got), err)
			}
		}
	})
}
