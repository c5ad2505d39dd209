package benchproc

import (
	"runtime/metrics"
	"testing"
)

// Counts are a process's running totals of the events a benchmark reports
// per operation besides CPU time: heap allocations, goroutines started and
// the threads' context switches (voluntary: a thread slept, mostly in
// futex or epoll; involuntary: the kernel preempted it).
type Counts struct {
	Allocs, Goroutines     uint64
	Voluntary, Involuntary int64
}

// Sub returns c - o, field by field.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Allocs: c.Allocs - o.Allocs, Goroutines: c.Goroutines - o.Goroutines,
		Voluntary: c.Voluntary - o.Voluntary, Involuntary: c.Involuntary - o.Involuntary}
}

// Report reports c divided by n (the operations it covers) as
// allocs/UNIT, goroutines/UNIT and the switches/UNIT metrics of b.
func (c Counts) Report(b *testing.B, n int, unit string) {
	if n <= 0 {
		return
	}
	per := func(v float64) float64 { return v / float64(n) }
	b.ReportMetric(per(float64(c.Allocs)), "allocs/"+unit)
	b.ReportMetric(per(float64(c.Goroutines)), "goroutines/"+unit)
	b.ReportMetric(per(float64(c.Voluntary)), "vol-switches/"+unit)
	b.ReportMetric(per(float64(c.Involuntary)), "invol-switches/"+unit)
}

// ReadCounts returns this process's counts so far (the switches are 0
// where getrusage does not report them).
func ReadCounts(tb testing.TB) Counts {
	tb.Helper()
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	var c Counts
	for i, p := range []*uint64{&c.Allocs, &c.Goroutines} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			*p = s[i].Value.Uint64()
		}
	}
	c.Voluntary, c.Involuntary = switches(tb)
	return c
}
