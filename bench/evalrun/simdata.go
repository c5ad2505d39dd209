package evalrun

import (
	"path/filepath"

	"github.com/mgrpo/mgrpo/bench"
)

// SimDataFormat is the layout the sim web's questions are written in for
// a benchmark; "" for benchmarks it cannot write.
func SimDataFormat(benchmark string) string {
	switch benchmark {
	case bench.GAIA:
		return "gaia"
	case bench.WebWalkerQA:
		return "webwalkerqa"
	case bench.JSONL:
		return "jsonl"
	}
	return ""
}

// SimDataPath is where, relative to the eval's folder, the sim web's
// questions are written in a benchmark's layout.
func SimDataPath(benchmark string) string {
	if benchmark == bench.GAIA {
		return filepath.Join("data", "metadata.jsonl")
	}
	return "tasks.jsonl"
}
