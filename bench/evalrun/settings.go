package evalrun

import (
	"errors"
	"fmt"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/rollout"
)

// Settings are what `mgrpo eval` is asked to run, as CheckSettings checks
// them before anything starts.
type Settings struct {
	// Benchmark, Data, Scorer and Out are --benchmark, --data, --scorer
	// and --out.
	Benchmark, Data, Scorer, Out string
	// Sim says the simulated world serves the eval (--sim); Judge that a
	// judge endpoint is configured.
	Sim, Judge bool
	// Mode is the agents' mode (--mode).
	Mode string
}

// CheckSettings reports every problem of s at once, each naming its flag
// and how to fix it: a benchmark, an out directory and (without the sim)
// data are required, xbench's data cannot be simulated, a scorer that
// needs a judge needs one, and frozen-sub is no mode to evaluate.
func CheckSettings(s Settings) []error {
	var errs []error
	if s.Benchmark == "" {
		errs = append(errs, errors.New("--benchmark: required (gaia, webwalkerqa, xbench or jsonl)"))
	}
	if s.Out == "" {
		errs = append(errs, errors.New("--out: required"))
	}
	switch {
	case s.Data == "" && !s.Sim:
		errs = append(errs, errors.New("--data: required without --sim"))
	case s.Data == "" && s.Benchmark == bench.XBench:
		errs = append(errs, errors.New("--data: xbench needs its published file (it is encrypted, so --sim cannot write it): give --data PATH/DeepSearch-2505.csv"))
	}
	if s.Benchmark != "" && !s.Judge {
		if _, err := score.ForBenchmark(s.Benchmark, s.Scorer, nil); err != nil {
			hint := "give --judge-url URL --judge-model NAME"
			if s.Sim {
				hint += ", or --judge-url sim to let the simulated model judge"
			}
			errs = append(errs, fmt.Errorf("--benchmark %s: %w: %s", s.Benchmark, err, hint))
		}
	}
	mode, err := rollout.ParseMode(s.Mode)
	if err != nil {
		errs = append(errs, fmt.Errorf("--mode: %w", err))
	} else if mode == rollout.ModeFrozenSub {
		errs = append(errs, errors.New("--mode frozen-sub is a training mode; evaluate with mgrpo or single"))
	}
	return errs
}
