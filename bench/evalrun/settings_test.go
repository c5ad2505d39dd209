package evalrun

import (
	"strings"
	"testing"

	"github.com/mgrpo/mgrpo/bench"
)

func TestCheckSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Settings
		want []string // each problem's start, in order
	}{
		{"a sim eval", Settings{Benchmark: bench.JSONL, Out: "o", Sim: true, Mode: "mgrpo"}, nil},
		{"a real eval with data", Settings{Benchmark: bench.GAIA, Data: "d", Out: "o", Mode: "single"}, nil},
		{"nothing given", Settings{Mode: "mgrpo"}, []string{"--benchmark: required", "--out: required", "--data: required without --sim"}},
		{"xbench on the sim", Settings{Benchmark: bench.XBench, Out: "o", Sim: true, Judge: true, Mode: "mgrpo"}, []string{"--data: xbench needs its published file"}},
		{"a judge scorer without a judge", Settings{Benchmark: bench.JSONL, Scorer: "judge", Out: "o", Sim: true, Mode: "mgrpo"},
			[]string{"--benchmark jsonl: "}},
		{"frozen-sub", Settings{Benchmark: bench.JSONL, Out: "o", Sim: true, Mode: "frozen-sub"}, []string{"--mode frozen-sub is a training mode"}},
		{"an unknown mode", Settings{Benchmark: bench.JSONL, Out: "o", Sim: true, Mode: "solo"}, []string{"--mode: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckSettings(tc.s)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %v, want %d", got, len(tc.want))
			}
			for i, err := range got {
				if !strings.HasPrefix(err.Error(), tc.want[i]) {
					t.Errorf("problem %q, want it to start %q", err, tc.want[i])
				}
			}
		})
	}
	// The judge hint offers the sim's judge only on the sim.
	if p := CheckSettings(Settings{Benchmark: bench.JSONL, Scorer: "judge", Out: "o", Sim: true, Mode: "mgrpo"}); len(p) != 1 || !strings.HasSuffix(p[0].Error(), "or --judge-url sim to let the simulated model judge") {
		t.Errorf("sim hint missing: %v", p)
	}
}
