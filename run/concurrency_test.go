package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/llm"
)

func TestConcurrencyValues(t *testing.T) {
	cases := []struct {
		in      string
		want    Concurrency
		json    string
		errPart string
	}{
		{in: "64", want: ConcurrencyOf(64), json: "64"},
		{in: "auto", want: AutoConcurrency(DefaultAutoRollouts), json: `"auto:256"`},
		{in: "AUTO:512", want: AutoConcurrency(512), json: `"auto:512"`},
		{in: "auto:0", errPart: "auto:CAP must be a whole number of at least 1"},
		{in: "auto:x", errPart: "auto:CAP"},
		{in: "many", errPart: `concurrency "many": want a number of rollouts in flight`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var c Concurrency
			err := c.Set(tc.in)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errPart)
				}
				return
			}
			if err != nil || c != tc.want {
				t.Fatalf("got %v, %v; want %v", c, err, tc.want)
			}
			b, _ := json.Marshal(c)
			if string(b) != tc.json {
				t.Fatalf("json %s, want %s", b, tc.json)
			}
			var back Concurrency
			if err := json.Unmarshal(b, &back); err != nil || back != c {
				t.Fatalf("json round trip: %v, %v", back, err)
			}
		})
	}
}

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
	if err != nil || c.Concurrency != ConcurrencyOf(12) || c.Concurrency.poolAuto() != nil {
		t.Fatalf("concurrency: 12 → %v, %v (pool auto %v)", c.Concurrency, err, c.Concurrency.poolAuto())
	}
	c, err = load("concurrency: auto:96\n")
	if err != nil || !c.Concurrency.Auto() || c.Concurrency.Rollouts() != 96 {
		t.Fatalf("concurrency: auto:96 → %v, %v", c.Concurrency, err)
	}
	if got := c.Concurrency.poolAuto(); got == nil || *got != (llm.AutoConfig{Cap: 96}) {
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
