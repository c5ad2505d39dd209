package farm

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/rollout"
)

// allowedDBars says which --dbar values the recorded run can be rescored
// with: those whose alignment of every trained group needs only
// trajectories the run's samples hold. A d̄ other than the run's draws
// another subset of a rollout's executors than the run's alignment kept
// (or, larger, asks for ones it dropped), and their tokens were never
// written. It reads every step again, so it is called only on the refusal
// path; the check ignores --drop-zero-variance (a value listed works with
// or without it).
func (cfg RescoreConfig) allowedDBars() (string, error) {
	sums, err := rollout.ReadSummaries(filepath.Join(cfg.From, rollout.SummaryFile))
	if err != nil {
		return "", err
	}
	steps := make([]recordedStep, 0, len(sums))
	maxD := 1
	for _, was := range sums {
		st, err := readRecordedStep(cfg.From, was.Step, cfg.GroupSize)
		if err != nil {
			return "", err
		}
		for _, d := range stepD(st) {
			maxD = max(maxD, d)
		}
		steps = append(steps, st)
	}
	passes := func(spec rollout.DBarSpec) bool {
		c := cfg
		c.DBar, c.DropZeroVariance = spec, false
		var prevD []int
		for _, st := range steps {
			if err := c.checkKept(st, prevD); err != nil {
				return false
			}
			prevD = stepD(st)
		}
		return true
	}
	var ok []string
	for d := 1; d <= maxD; d++ {
		if passes(rollout.DBarSpec{Fixed: d}) {
			s := strconv.Itoa(d)
			if d == maxD {
				s += " or more" // every trajectory kept: no larger d̄ drops one
			}
			ok = append(ok, s)
		}
	}
	if passes(rollout.DBarSpec{Auto: true}) {
		ok = append(ok, "auto")
	}
	if len(ok) == 0 {
		return "none but the run's own settings per step", nil
	}
	return strings.Join(ok, ", "), nil
}

// explainRefusal adds to a refusal of the new d̄ the values this run
// allows and why the others are refused.
func (cfg RescoreConfig) explainRefusal(err error) error {
	var sub subNotKept
	if !errors.As(err, &sub) || !cfg.Mode.TrainsExecutor() {
		return err
	}
	allowed, aerr := cfg.allowedDBars()
	if aerr != nil {
		return err
	}
	return fmt.Errorf("%w\n  --dbar values this run allows: %s (the run wrote the tokens of the executor trajectories its alignment kept, d̄ per step as in its summary; another d̄ draws other trajectories, whose tokens were never written)", err, allowed)
}

// subNotKept marks a refusal for an executor trajectory the run's
// alignment left out: one a different d̄ may not need.
type subNotKept struct{ error }

func (e subNotKept) Unwrap() error { return e.error }
