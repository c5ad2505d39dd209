package evalrun

import (
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
)

func TestSimData(t *testing.T) {
	for _, tc := range []struct {
		benchmark, format, path string
	}{
		{bench.GAIA, "gaia", filepath.Join("data", "metadata.jsonl")},
		{bench.WebWalkerQA, "webwalkerqa", "tasks.jsonl"},
		{bench.JSONL, "jsonl", "tasks.jsonl"},
		{bench.XBench, "", "tasks.jsonl"},
	} {
		if got := SimDataFormat(tc.benchmark); got != tc.format {
			t.Errorf("SimDataFormat(%s) = %q, want %q", tc.benchmark, got, tc.format)
		}
		if got := SimDataPath(tc.benchmark); got != tc.path {
			t.Errorf("SimDataPath(%s) = %q, want %q", tc.benchmark, got, tc.path)
		}
	}
}
