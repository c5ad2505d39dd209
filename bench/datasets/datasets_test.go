package datasets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
)

func TestLoadByName(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(`{"id":"1","question":"q","answer":"a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	items, err := Load(bench.JSONL, p, bench.Filter{})
	if err != nil || len(items) != 1 {
		t.Fatalf("Load = %v, %v", items, err)
	}
	for _, name := range []string{bench.GAIA, bench.WebWalkerQA, bench.XBench, bench.JSONL} {
		if _, err := LoaderFor(name); err != nil {
			t.Errorf("LoaderFor(%q): %v", name, err)
		}
	}
	if _, err := Load("hle", p, bench.Filter{}); err == nil {
		t.Error("unknown benchmark: want an error")
	}
}
