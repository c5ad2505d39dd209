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
// profile to path and returns the peak's bytes in use.
func Watch(path string, interval time.Duration) (stop func() (peak uint64, err error)) {
	var (
		best []byte
		high uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
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
		return high, nil
	}
}
