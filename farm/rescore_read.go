package farm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/rollout"
)

// ErrNotRescorable: a run directory cannot be rescored as asked (files
// missing or malformed, a trajectory the new settings need that the run
// did not keep). Nothing is written when a rescore fails with it.
var ErrNotRescorable = errors.New("cannot rescore")

// recordedStep is one step of a run directory as rescoring reads it: the
// rollouts' records (lines of rollouts.jsonl, in assembly order) grouped
// by query, the samples that hold their tokens and the statistics the
// step was written with.
type recordedStep struct {
	step   int
	groups []recordedGroup
	stats  []rollout.QueryStats
	// padToken and padVersion are those of the step's padding samples
	// (found: a padding sample was written).
	padToken   int
	padVersion int64
	padFound   bool
}

// recordedGroup is one query's K rollouts with their trajectories'
// recorded token sequences.
type recordedGroup struct {
	queryID string
	records []*rollout.RolloutRecord
	// stats is the group's statistics line; nil when the run excluded
	// the group (a rollout still an infra failure after its retries: no
	// samples, no statistics line, only its rollouts.jsonl lines).
	stats *rollout.QueryStats
	// planner[k] and executors[k][i] are rollout k's trajectories as the
	// samples held them; a trajectory no sample held has no sequences.
	planner   []rollout.Trajectory
	executors [][]rollout.Trajectory
}

// readRecordedStep reads step's files under dir. group is K.
func readRecordedStep(dir string, step, group int) (recordedStep, error) {
	out := recordedStep{step: step}
	sdir := rollout.StepDir(dir, step)
	recs, err := readRolloutRecords(filepath.Join(sdir, rollout.RolloutsFile))
	if err != nil {
		return out, err
	}
	if len(recs)%group != 0 {
		return out, fmt.Errorf("%w: %s: %d rollouts, not a multiple of the group size %d", ErrNotRescorable, filepath.Join(sdir, rollout.RolloutsFile), len(recs), group)
	}
	planner, err := readSamplesFile(filepath.Join(sdir, rollout.PlannerFile), true)
	if err != nil {
		return out, err
	}
	executor, err := readSamplesFile(filepath.Join(sdir, rollout.ExecutorFile), false)
	if err != nil {
		return out, err
	}
	if out.stats, err = rollout.ReadStatsJSONL(filepath.Join(sdir, rollout.StatsFile)); err != nil {
		return out, fmt.Errorf("%w: %w", ErrNotRescorable, err)
	}
	byPlanner := map[trajKey][]rollout.Sample{}
	for _, s := range planner {
		k := trajKey{s.QueryID, s.Rollout, -1}
		byPlanner[k] = append(byPlanner[k], s)
	}
	// An executor trajectory's tokens are in its original entry or in any
	// duplicate of it; the samples of one entry are consecutive.
	byExec := map[trajKey][]rollout.Sample{}
	var entry struct {
		key  trajKey
		slot [2]int
	}
	done := map[trajKey]bool{}
	for i, s := range executor {
		if s.FinishReason == rollout.FinishReasonPadding {
			out.padToken, out.padVersion, out.padFound = s.InputIDs[0], s.PolicyVersion, true
			continue
		}
		if s.SubIndex == nil {
			return out, fmt.Errorf("%w: step %d: executor sample %d has no sub_index", ErrNotRescorable, step, i)
		}
		src := trajKey{s.QueryID, s.Rollout, *s.SubIndex}
		if s.DuplicateOf != nil {
			src = trajKey{s.QueryID, s.DuplicateOf.Rollout, s.DuplicateOf.SubIndex}
		}
		slot := [2]int{s.Rollout, *s.SubIndex}
		if i == 0 || entry.key != src || entry.slot != slot || executor[i-1].QueryID != s.QueryID {
			// A new entry: the first entry of a source holds its tokens.
			if entry.key != (trajKey{}) {
				done[entry.key] = true
			}
			entry.key, entry.slot = src, slot
		}
		if !done[src] {
			byExec[src] = append(byExec[src], s)
		}
	}
	// The statistics lines follow the groups in order, skipping the
	// excluded ones; a group without its line must hold an infra rollout.
	next := 0
	for q := 0; q < len(recs); q += group {
		g := recordedGroup{queryID: recs[q].Task.QueryID, records: recs[q : q+group]}
		if next < len(out.stats) && out.stats[next].QueryID == g.queryID {
			g.stats = &out.stats[next]
			next++
		} else if !slices.ContainsFunc(g.records, func(r *rollout.RolloutRecord) bool { return r.FailureKind == failure.KindInfra }) {
			what := "no statistics line"
			if next < len(out.stats) {
				what = fmt.Sprintf("statistics of query %q", out.stats[next].QueryID)
			}
			return out, fmt.Errorf("%w: step %d: %s where rollouts.jsonl has %q, and no rollout of it is an infra failure (which would have excluded it)", ErrNotRescorable, step, what, g.queryID)
		}
		g.planner = make([]rollout.Trajectory, group)
		g.executors = make([][]rollout.Trajectory, group)
		for k, r := range g.records {
			if r.Task.QueryID != g.queryID || r.Task.K != k {
				return out, fmt.Errorf("%w: step %d: rollout %s in the slot of query %q rollout %d", ErrNotRescorable, step, r.ID, g.queryID, k)
			}
			if r.Tree == nil {
				return out, fmt.Errorf("%w: step %d: rollout %s has no tree", ErrNotRescorable, step, r.ID)
			}
			var err error
			if g.planner[k], err = trajectoryOf(byPlanner[trajKey{g.queryID, k, -1}], r.Scores.FormatOK); err != nil {
				return out, fmt.Errorf("%w: step %d: rollout %s planner: %w", ErrNotRescorable, step, r.ID, err)
			}
			g.executors[k] = make([]rollout.Trajectory, len(r.Scores.Subs))
			for i, s := range r.Scores.Subs {
				if g.executors[k][i], err = trajectoryOf(byExec[trajKey{g.queryID, k, i}], s.FormatOK); err != nil {
					return out, fmt.Errorf("%w: step %d: rollout %s sub %d: %w", ErrNotRescorable, step, r.ID, i, err)
				}
			}
		}
		out.groups = append(out.groups, g)
	}
	if next != len(out.stats) {
		return out, fmt.Errorf("%w: step %d: %d statistics lines for the %d groups rollouts.jsonl holds (%d of them matched)", ErrNotRescorable, step, len(out.stats), len(recs)/group, next)
	}
	return out, nil
}

// trajKey names a trajectory of a step: query, rollout and sub_index (-1:
// the planner).
type trajKey struct {
	query string
	k, i  int
}

// trajectoryOf rebuilds a trajectory from the samples of one of its
// entries (none: a trajectory without sequences, or one the run did not
// keep; expectedSequences tells which).
func trajectoryOf(samples []rollout.Sample, formatOK bool) (rollout.Trajectory, error) {
	t := rollout.Trajectory{FormatOK: formatOK, FinishReason: "error"}
	for i, s := range samples {
		if i == 0 {
			t.PolicyVersion, t.NumTurns, t.FinishReason, t.FormatOK = s.PolicyVersion, s.NumTurns, s.FinishReason, s.FormatOK
		}
		seq, err := rollout.Tokens{InputIDs: s.InputIDs, LossMask: s.LossMask, Logprobs: s.Logprobs}.Compact()
		if err != nil {
			return rollout.Trajectory{}, fmt.Errorf("sample %d of the trajectory: %w", i, err)
		}
		seq.FirstTurn, seq.TurnFinishReasons, seq.Split = s.FirstTurn, s.TurnFinishReasons, s.SplitReason
		t.Sequences = append(t.Sequences, seq)
	}
	return t, nil
}

// expectedSequences is how many token sequences trajectory i of r (0: the
// planner, 1+j: executor j) formed: none when it had no turns or its turns
// formed none, else one more than its splits (drift events, history edits,
// context cuts).
func expectedSequences(r *rollout.RolloutRecord, i int) int {
	var tr *rollout.TrajectoryRecord
	if i == 0 {
		tr = r.Tree.Planner
	} else if i-1 < len(r.Tree.Executors) {
		tr = r.Tree.Executors[i-1]
	}
	if tr == nil || len(tr.Turns) == 0 || i >= len(r.Drifts) {
		return 0
	}
	if i < len(r.SequenceErrors) && r.SequenceErrors[i] != "" {
		return 0
	}
	n := r.Drifts[i] + 1
	if i < len(r.HistoryEdits) {
		n += r.HistoryEdits[i]
	}
	if i < len(r.ContextCuts) {
		n += r.ContextCuts[i]
	}
	return n
}

// readRolloutRecords reads a rollouts.jsonl file.
func readRolloutRecords(path string) ([]*rollout.RolloutRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing", ErrNotRescorable, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRescorable, err)
	}
	defer f.Close()
	var out []*rollout.RolloutRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		r := new(rollout.RolloutRecord)
		if err := json.Unmarshal(b, r); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", ErrNotRescorable, path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotRescorable, path, err)
	}
	return out, nil
}

// readSamplesFile reads a step's samples; a missing executor file is an
// empty one (modes without a sub side write it empty, older runs may not).
func readSamplesFile(path string, required bool) ([]rollout.Sample, error) {
	s, err := rollout.ReadSamplesJSONL(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRescorable, err)
	}
	return s, nil
}
