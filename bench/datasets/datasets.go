// Package datasets picks a benchmark loader by name.
package datasets

import (
	"fmt"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/gaia"
	"github.com/mgrpo/mgrpo/bench/jsonl"
	"github.com/mgrpo/mgrpo/bench/webwalker"
	"github.com/mgrpo/mgrpo/bench/xbench"
)

// Loader reads a benchmark file (or folder, for GAIA) and applies a filter.
type Loader func(path string, f bench.Filter) ([]bench.Item, error)

// LoaderFor returns the loader of the named benchmark.
func LoaderFor(benchmark string) (Loader, error) {
	switch benchmark {
	case bench.GAIA:
		return gaia.Load, nil
	case bench.WebWalkerQA:
		return webwalker.Load, nil
	case bench.XBench:
		return xbench.Load, nil
	case bench.JSONL:
		return jsonl.Load, nil
	}
	return nil, fmt.Errorf("unsupported benchmark %q", benchmark)
}

// Load loads the named benchmark from path.
func Load(benchmark, path string, f bench.Filter) ([]bench.Item, error) {
	l, err := LoaderFor(benchmark)
	if err != nil {
		return nil, err
	}
	return l(path, f)
}
