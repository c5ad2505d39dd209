package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/yamldiff"
	"github.com/mgrpo/mgrpo/store"
)

// checkResumedRun refuses a resume whose settings or tasks are not the
// run's, naming each key that differs with both values, before anything
// is printed (issue 50). Both sides are compared as the run record holds
// them (steps, concurrency, grace, out and store may change on a resume).
// A record it cannot read is left to the farm, which says why. A run that
// is not resumed, or has no store, passes.
func checkResumedRun(ctx context.Context, st store.Store, resume bool, cfg Config, tasks []farm.Task) error {
	if !resume || st == nil {
		return nil
	}
	rec, err := st.Run(ctx, cfg.Run)
	if err != nil {
		return nil
	}
	spec, err := farm.ReadRunSpec(rec)
	if err != nil {
		return nil
	}
	stored, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return nil
	}
	theirs, err1 := stored.RunRecordConfig()
	ours, err2 := cfg.RunRecordConfig()
	a, err3 := ConfigFromRunRecord(theirs)
	b, err4 := ConfigFromRunRecord(ours)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return nil
	}
	flags := map[string]string{}
	for _, k := range KeyDocs() {
		if role, _, _ := strings.Cut(k.Key, "."); !isRole(role) {
			flags[k.Key] = k.Flag
		}
	}
	var lines []string
	for _, c := range yamldiff.Diff(a, b, yamldiff.Shown) {
		lines = append(lines, fmt.Sprintf("%s: the run's %s, now %s", name(c.Key, flags[c.Key]), c.Old, c.New))
	}
	if len(lines) == 0 && string(theirs) != string(ours) {
		lines = append(lines, "a setting without a key of its own differs")
	}
	// The sim's tasks follow from the settings (its seed), which say it.
	if tc := farm.CompareTasks(spec.Tasks, tasks); !tc.Same() && (cfg.Tasks != "" || len(lines) == 0) {
		where := "the simulated world's tasks"
		if cfg.Tasks != "" {
			where = "the tasks of --tasks " + cfg.Tasks
		}
		lines = append(lines, where+": "+tc.String())
	}
	if len(lines) == 0 {
		return nil
	}
	return invalid(fmt.Errorf("--resume: run %q was started with other settings than these:\n  %s\nresume with the settings it was started with (its flags and --config), or start a new run in a new --out",
		cfg.Run, strings.Join(lines, "\n  ")))
}
