package view

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/mgrpo/mgrpo/rollout"
)

// ErrNotRun is wrapped by New's error for a directory that holds no run.
var ErrNotRun = errors.New("not a run directory")

// Step states as the pages show them.
const (
	// StateDone is a step with its files and its summary line.
	StateDone = "done"
	// StateNoSummary is a step whose files are complete but whose summary
	// line is not written yet (the farm writes it just after the files).
	StateNoSummary = "in progress (summary not written yet)"
	// StateWriting is a step whose files are being written (only a hidden
	// temporary directory exists).
	StateWriting = "in progress (files being written)"
)

var (
	stepDirRE = regexp.MustCompile(`^step-(\d{6,})$`)
	tmpDirRE  = regexp.MustCompile(`^\.step-(\d{6,})\.tmp-`)
)

// stepEntry is one step of the run listing.
type stepEntry struct {
	Step  int
	State string
	// Summary is the step's summary line; nil unless State is StateDone.
	Summary *rollout.StepSummary
}

// checkRun reports whether dir looks like a run directory: it exists and
// holds summary.jsonl or at least one step directory (final or temporary).
func checkRun(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w (expected a run directory as mgrpo rollout --out DIR writes: %s and step-NNNNNN/ directories)", dir, err, rollout.SummaryFile)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w: it is a file (expected a directory holding %s and step-NNNNNN/ directories, as mgrpo rollout --out DIR writes)", dir, ErrNotRun, rollout.SummaryFile)
	}
	if _, err := os.Stat(filepath.Join(dir, rollout.SummaryFile)); err == nil {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, e := range ents {
		if e.IsDir() && (stepDirRE.MatchString(e.Name()) || tmpDirRE.MatchString(e.Name())) {
			return nil
		}
	}
	return fmt.Errorf("%s: %w: no %s and no step-NNNNNN/ directory (expected what mgrpo rollout --out DIR writes)", dir, ErrNotRun, rollout.SummaryFile)
}

// listSteps returns the run's steps in order: every step with a summary
// line, a step directory or a temporary step directory. A summary.jsonl
// that is missing counts as empty (DirSink replaces the file whole, so it
// never holds a partial line).
func (h *Handler) listSteps() ([]stepEntry, error) {
	sums, err := h.summaries()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(h.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", h.dir, err)
	}
	byStep := map[int]*stepEntry{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if m := stepDirRE.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			byStep[n] = &stepEntry{Step: n, State: StateNoSummary}
		}
	}
	for _, e := range ents {
		if m := tmpDirRE.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			n, _ := strconv.Atoi(m[1])
			if _, ok := byStep[n]; !ok {
				byStep[n] = &stepEntry{Step: n, State: StateWriting}
			}
		}
	}
	for i := range sums {
		s := &sums[i]
		if e, ok := byStep[s.Step]; ok {
			e.State, e.Summary = StateDone, s
		}
	}
	out := make([]stepEntry, 0, len(byStep))
	for _, e := range byStep {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// summaries reads summary.jsonl, cached while its size and modification
// time stay the same.
func (h *Handler) summaries() ([]rollout.StepSummary, error) {
	path := filepath.Join(h.dir, rollout.SummaryFile)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sumCache.size == fi.Size() && h.sumCache.mod.Equal(fi.ModTime()) && h.sumCache.rows != nil {
		return h.sumCache.rows, nil
	}
	rows, err := rollout.ReadSummaries(path)
	if err != nil {
		return nil, err
	}
	h.sumCache.size, h.sumCache.mod, h.sumCache.rows = fi.Size(), fi.ModTime(), rows
	return rows, nil
}
