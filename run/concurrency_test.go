package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/llm"
)

func TestConcurrencyYAMLAndPools(t *testing.T) {
	dir := t.TempDir()
	load := func(text string) (Config, error) {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	c, err := load("concurrency: 12\n")
	if err != nil || c.Concurrency != ConcurrencyOf(12) || c.Concurrency.PoolAuto() != nil {
		t.Fatalf("concurrency: 12 → %v, %v (pool auto %v)", c.Concurrency, err, c.Concurrency.PoolAuto())
	}
	c, err = load("concurrency: auto:96\n")
	if err != nil || !c.Concurrency.Auto() || c.Concurrency.Rollouts() != 96 {
		t.Fatalf("concurrency: auto:96 → %v, %v", c.Concurrency, err)
	}
	if got := c.Concurrency.PoolAuto(); got == nil || *got != (llm.AutoConfig{Cap: 96}) {
		t.Fatalf("pool auto %+v, want a cap of 96", got)
	}
	if _, err := load("concurrency: lots\n"); err == nil || !strings.Contains(err.Error(), "concurrency") {
		t.Fatalf("bad value: err = %v, want one naming concurrency", err)
	}
	// A fixed concurrency's run record is the number it always was; the
	// record leaves it out anyway.
	def := DefaultConfig()
	var cfg Config
	if err := cfg.SetFlag("concurrency", &def.Concurrency); err != nil || cfg.Concurrency != ConcurrencyOf(64) {
		t.Fatalf("SetFlag: %v, %v", cfg.Concurrency, err)
	}
}
