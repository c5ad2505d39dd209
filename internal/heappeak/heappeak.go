// Package heappeak keeps the heap profile taken at the highest heap a
// process reaches, to see what holds its peak RSS: a developer's tool for
// the memory benchmarks (docs/benchmarks.md), not something users see.
package heappeak

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// Watch samples the heap in use every interval and keeps the heap profile
// of the highest sample. The returned stop ends the sampling, writes that
// profile to path and the runtime's memory statistics of that moment (heap,
// stacks, goroutines: what the heap profile does not show) to path+".txt",
// and returns the peak's heap bytes in use.
func Watch(path string, interval time.Duration) (stop func() (peak uint64, err error)) {
	var (
		best  []byte
		stats string
		high  uint64
		done  = make(chan struct{})
		wg    sync.WaitGroup
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse <= high {
			return
		}
		high = ms.HeapInuse
		var buf bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&buf, 0); err == nil {
			best = buf.Bytes()
		}
		const mib = 1 << 20
		stats = fmt.Sprintf("heap_inuse_mib %d\nheap_idle_mib %d\nheap_released_mib %d\nstack_inuse_mib %d\nsys_mib %d\ngoroutines %d\nnext_gc_mib %d\n",
			ms.HeapInuse/mib, ms.HeapIdle/mib, ms.HeapReleased/mib, ms.StackInuse/mib, ms.Sys/mib, runtime.NumGoroutine(), ms.NextGC/mib)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() (uint64, error) {
		close(done)
		wg.Wait()
		sample()
		if err := os.WriteFile(path, best, 0o644); err != nil {
			return high, fmt.Errorf("heap profile at the peak: %w", err)
		}
		if err := os.WriteFile(path+".txt", []byte(stats), 0o644); err != nil {
			return high, fmt.Errorf("memory statistics at the peak: %w", err)
		}
		return high, nil
	}
}
