package farm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// RescoreConfig says how Rescore recomputes a recorded run: where the run
// is, the settings it was written with and the new ones.
type RescoreConfig struct {
	// From is the recorded run's directory (its step files and
	// summary.jsonl).
	From string
	// Run is the run's name, written into every sample (the recorded
	// run's, so that unchanged settings give unchanged files).
	Run       string
	Seed      uint64
	Mode      rollout.Mode
	GroupSize int
	// Was holds the settings the run was written with: its d̄ is read
	// from each step's statistics, its drop-zero-variance from here.
	WasDropZeroVariance bool

	// The new settings: d̄, dropping zero-variance groups, the reward
	// weights, r_expert's fallback.
	DBar             rollout.DBarSpec
	DropZeroVariance bool
	Weights          rollout.RewardWeights
	ExpertFallback   rollout.ExpertFallback
	// Scorer, when set, judges every valid answer again (r_correct); nil
	// keeps the recorded verdicts.
	Scorer rollout.Scorer
	// Expert, when set, rates every valid executor report again
	// (r_expert). Nil: the recorded r_expert when KeepExpert (the run had a
	// judge), else ExpertFallback's value.
	Expert     rollout.ExpertJudge
	KeepExpert bool
	// Prices price each step's usage, as the run did.
	Prices rollout.Prices

	// Sink receives the new run's steps and summaries.
	Sink rollout.Sink
	// Store, when set, is the new run's store: its record (RunConfig and
	// Tasks), each step's record and statistics.
	Store store.Store
	// FilesDir is where the new run's step directories will be, for its
	// step records (empty: the sink's own location).
	FilesDir  string
	RunConfig json.RawMessage
	Tasks     []Task
	Logger    *slog.Logger
	// OnStep, when set, is called with each step's change summary.
	OnStep func(RescoreStep)
}

// RescoreStep says what rescoring changed in one step.
type RescoreStep struct {
	Step     int `json:"step"`
	Groups   int `json:"groups"`
	Rollouts int `json:"rollouts"`
	// DBar and WasDBar are the new and the recorded d̄.
	DBar    int `json:"dbar"`
	WasDBar int `json:"was_dbar"`
	// Roles holds the planner's (the single agent's) changes and, with a
	// sub side, the executors'.
	Roles map[rollout.Role]RoleChanges `json:"roles"`
	// Excluded counts the groups the run excluded (a rollout still an
	// infra failure after its retries): they stay excluded, their
	// rollouts rescored but in no batch, statistics or change count.
	Excluded int `json:"excluded_groups,omitempty"`
	// Seconds is how long the step took to rescore.
	Seconds float64 `json:"seconds"`
}

// RoleChanges are one role's changes in a step.
type RoleChanges struct {
	// SignChanged counts groups in which some trajectory's advantage
	// changed sign (−, 0, +).
	SignChanged int `json:"sign_changed"`
	// BecameZeroVariance and LeftZeroVariance count groups whose rewards
	// became all equal, and groups whose rewards no longer are.
	BecameZeroVariance int `json:"became_zero_variance"`
	LeftZeroVariance   int `json:"left_zero_variance"`
	// MeanAbsDelta is the mean |Δ advantage| over the trajectories the
	// old and new alignments share (Compared of them).
	MeanAbsDelta float64 `json:"mean_abs_delta_advantage"`
	Compared     int     `json:"compared"`
}

// Rescore recomputes every step of the recorded run cfg.From with cfg's
// settings: rewards from the recorded verdicts (or the new judge's),
// group statistics, advantages, alignment and samples, written through
// cfg.Sink as a normal run. No model is called except cfg.Scorer and
// cfg.Expert. It returns each step's changes. A run that cannot give what
// the new settings need (a trajectory the run's alignment dropped, a
// group its drop-zero-variance left out) fails with ErrNotRescorable
// before the step that needs it is written: the caller writes into a
// place it removes on failure (run.Rescore does).
func Rescore(ctx context.Context, cfg RescoreConfig) ([]RescoreStep, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sums, err := rollout.ReadSummaries(filepath.Join(cfg.From, rollout.SummaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: not a run directory (no %s)", ErrNotRescorable, cfg.From, rollout.SummaryFile)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRescorable, err)
	}
	if len(sums) == 0 {
		return nil, fmt.Errorf("%w: %s: no step written", ErrNotRescorable, cfg.From)
	}
	if cfg.Store != nil {
		spec, err := json.Marshal(RunSpec{Config: cfg.RunConfig, Tasks: cfg.Tasks})
		if err != nil {
			return nil, fmt.Errorf("run record: %w", err)
		}
		if err := cfg.Store.CreateRun(ctx, store.RunRecord{ID: cfg.Run, Version: store.RunRecordVersion, Config: spec, Created: time.Now().UTC()}); err != nil {
			return nil, fmt.Errorf("rescore: store: %w", err)
		}
	}
	var (
		out   []RescoreStep
		prevD []int
	)
	// One step at a time, so memory holds one step; a step is checked
	// before its first file is written.
	for _, was := range sums {
		st, err := readRecordedStep(cfg.From, was.Step, cfg.GroupSize)
		if err != nil {
			return out, err
		}
		if err := cfg.checkKept(st, prevD); err != nil {
			return out, cfg.explainRefusal(err)
		}
		change, d, err := cfg.rescoreStep(ctx, st, was, prevD)
		if err != nil {
			return out, cfg.explainRefusal(err)
		}
		prevD = d
		log.Info("step rescored", "step", st.step, "dbar", change.DBar, "seconds", change.Seconds)
		if cfg.OnStep != nil {
			cfg.OnStep(change)
		}
		out = append(out, change)
	}
	return out, nil
}

// checkKept refuses settings that need a trajectory the run did not keep,
// before the step is scored (so no judge is asked for a rescore that
// cannot be written): it aligns every group of the step as the rescore
// will (d̄ resolved as it will be) and checks that each entry's trajectory
// has the sequences its record says it formed. With --drop-zero-variance a
// level may be dropped once scored: its check waits for the group's
// result (checkGroup in rescoreStep).
func (cfg RescoreConfig) checkKept(st recordedStep, prevD []int) error {
	dbar, _, err := cfg.resolveDBar(prevD, stepD(st))
	if err != nil {
		return fmt.Errorf("%w: step %d: %w", ErrNotRescorable, st.step, err)
	}
	for _, g := range st.groups {
		if g.stats == nil {
			continue // excluded: no samples to build
		}
		var slots []rollout.SubSlot
		if cfg.Mode.TrainsExecutor() {
			gd := make([]int, len(g.records))
			for k, r := range g.records {
				gd[k] = len(r.Scores.Subs)
			}
			al, err := rollout.Align(gd, dbar, alignRNG(cfg.Seed, st.step, g.queryID))
			if err != nil {
				return fmt.Errorf("%w: step %d query %q: %w", ErrNotRescorable, st.step, g.queryID, err)
			}
			slots = al.Slots
		}
		if err := cfg.checkGroup(st, g, cfg.DropZeroVariance, cfg.DropZeroVariance, slots); err != nil {
			return err
		}
	}
	return nil
}

// checkGroup checks that the trajectories a group's samples need have
// their recorded sequences: every planner unless mainDropped, the sources
// of slots unless subDropped.
func (cfg RescoreConfig) checkGroup(st recordedStep, g recordedGroup, mainDropped, subDropped bool, slots []rollout.SubSlot) error {
	need := func(k, i int, what string) error {
		tr := g.planner[k]
		if i >= 0 {
			tr = g.executors[k][i]
		}
		want := expectedSequences(g.records[k], i+1)
		if len(tr.Sequences) == want {
			return nil
		}
		if len(tr.Sequences) == 0 && i >= 0 {
			return subNotKept{fmt.Errorf("%w: step %d query %q rollout %d %s: the run did not keep its tokens (%s), and the new settings need them", ErrNotRescorable, st.step, g.queryID, k, what, cfg.whyMissing(st, g, true))}
		}
		if len(tr.Sequences) == 0 {
			return fmt.Errorf("%w: step %d query %q rollout %d %s: the run did not keep its tokens (%s), and the new settings need them", ErrNotRescorable, st.step, g.queryID, k, what, cfg.whyMissing(st, g, i >= 0))
		}
		return fmt.Errorf("%w: step %d query %q rollout %d %s: %d token sequences in the samples, its record says %d", ErrNotRescorable, st.step, g.queryID, k, what, len(tr.Sequences), want)
	}
	if !mainDropped {
		for k := range g.records {
			if err := need(k, -1, "planner"); err != nil {
				return err
			}
		}
	}
	if subDropped {
		return nil
	}
	seen := map[rollout.SubRef]bool{}
	for _, s := range slots {
		if s.Padding || seen[s.Source] {
			continue
		}
		seen[s.Source] = true
		if err := need(s.Source.Rollout, s.Source.SubIndex, fmt.Sprintf("executor %d", s.Source.SubIndex)); err != nil {
			return err
		}
	}
	return nil
}

// whyMissing says why a group's trajectory may be missing from the
// recorded samples.
func (cfg RescoreConfig) whyMissing(st recordedStep, g recordedGroup, executor bool) string {
	if cfg.WasDropZeroVariance {
		return "the run dropped zero-variance groups, or its alignment to d̄ left this trajectory out"
	}
	if executor {
		for _, s := range st.stats {
			if s.QueryID == g.queryID {
				return fmt.Sprintf("the run aligned this group to d̄ = %d and left this trajectory out", s.DBar)
			}
		}
	}
	return "no sample holds it"
}

// stepD returns a step's d_k in assembly order, those of the groups it
// trains: an excluded group's d_k leave the observations, as in a run
// (observedD).
func stepD(st recordedStep) []int {
	var d []int
	for _, g := range st.groups {
		if g.stats == nil {
			continue
		}
		for _, r := range g.records {
			d = append(d, len(r.Scores.Subs))
		}
	}
	return d
}

// resolveDBar resolves the new d̄ of a step as a run does (see
// Farm.resolveDBar).
func (cfg RescoreConfig) resolveDBar(prevD, thisD []int) (int, string, error) {
	if !cfg.Mode.TrainsExecutor() {
		return 0, "", nil
	}
	observed, source := prevD, "previous step"
	switch {
	case !cfg.DBar.Auto:
		source = "fixed"
	case len(prevD) == 0 && len(thisD) == 0:
		observed, source = []int{1}, "none observed (every group excluded)"
	case len(prevD) == 0:
		observed, source = thisD, "calibration pass (this step)"
	}
	dbar, err := cfg.DBar.Resolve(observed)
	return dbar, source, err
}

// rescoreStep rescores, writes and records one step; it returns the
// step's changes and its d_k.
func (cfg RescoreConfig) rescoreStep(ctx context.Context, st recordedStep, was rollout.StepSummary, prevD []int) (RescoreStep, []int, error) {
	start := time.Now()
	d := stepD(st)
	dbar, _, err := cfg.resolveDBar(prevD, d)
	if err != nil {
		return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
	}
	change := RescoreStep{Step: st.step, Groups: len(st.groups), DBar: dbar, Roles: map[rollout.Role]RoleChanges{}}
	padVersion := was.ExecutorPolicyVersion
	for _, g := range st.groups {
		for _, r := range g.records {
			padVersion = max(padVersion, r.Task.ExecutorPolicyVersion)
		}
	}
	b := rollout.SampleBuilder{Run: cfg.Run, Step: st.step, PadPolicyVersion: padVersion, ShareTokens: true}
	if st.padFound {
		b.PadTokenID, b.PadPolicyVersion = st.padToken, st.padVersion
	}
	gcfg := rollout.GroupConfig{Mode: cfg.Mode, DBar: dbar, DropZeroVariance: cfg.DropZeroVariance, RunSeed: cfg.Seed, Step: st.step}
	w, err := beginStepWriter(ctx, cfg.Sink, st.step)
	if err != nil {
		return RescoreStep{}, nil, err
	}
	sum := was
	re := rescoreTally{}
	var diff changeTally
	for _, g := range st.groups {
		if g.stats == nil {
			// Excluded by the run: its rollouts are scored as the run
			// scored them and written, the group kept out of the batches.
			files := rollout.StepFiles{RolloutsCompact: true}
			for _, r := range g.records {
				r.Scores = cfg.scores(ctx, r)
				re.addExcluded(r)
				line, err := json.Marshal(r)
				if err != nil {
					w.Abort()
					return RescoreStep{}, nil, fmt.Errorf("rescore step %d: encode %s: %w", st.step, r.ID, err)
				}
				files.Rollouts = append(files.Rollouts, line)
			}
			if err := w.Append(ctx, files); err != nil {
				w.Abort()
				return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
			}
			change.Excluded++
			change.Rollouts += len(g.records)
			continue
		}
		in := rollout.GroupInput{QueryID: g.queryID, Rollouts: make([]rollout.RolloutRewards, len(g.records))}
		old := rollout.GroupInput{QueryID: g.queryID, Rollouts: make([]rollout.RolloutRewards, len(g.records))}
		files := rollout.StepFiles{RolloutsCompact: true}
		for k, r := range g.records {
			old.Rollouts[k] = recordedRewards(r, cfg.Mode)
			r.Scores = cfg.scores(ctx, r)
			in.Rollouts[k] = recordedRewards(r, cfg.Mode)
			re.add(r)
			line, err := json.Marshal(r)
			if err != nil {
				w.Abort()
				return RescoreStep{}, nil, fmt.Errorf("rescore step %d: encode %s: %w", st.step, r.ID, err)
			}
			files.Rollouts = append(files.Rollouts, line)
		}
		res, err := rollout.ProcessGroup(gcfg, in)
		if err != nil {
			w.Abort()
			return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
		}
		if cfg.DropZeroVariance {
			slots := make([]rollout.SubSlot, len(res.Sub))
			for i, e := range res.Sub {
				slots[i] = e.SubSlot
			}
			if err := cfg.checkGroup(st, g, res.MainDropped, res.SubDropped, slots); err != nil {
				w.Abort()
				return RescoreStep{}, nil, err
			}
		}
		tr := rollout.GroupTrajectories{Planner: g.planner, Executors: g.executors}
		if cfg.Mode == rollout.ModeSingle {
			tr.Executors = make([][]rollout.Trajectory, len(g.records))
		}
		if files.Planner, files.Executor, err = b.Build(res, tr); err != nil {
			w.Abort()
			return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
		}
		files.Stats = []rollout.QueryStats{res.Stats}
		if err := w.Append(ctx, files); err != nil {
			w.Abort()
			return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
		}
		ocfg := gcfg
		ocfg.DBar, ocfg.DropZeroVariance = g.stats.DBar, cfg.WasDropZeroVariance
		if cfg.Mode.TrainsExecutor() && ocfg.DBar < 1 {
			w.Abort()
			return RescoreStep{}, nil, fmt.Errorf("%w: step %d query %q: the statistics hold no d̄", ErrNotRescorable, st.step, g.queryID)
		}
		was, err := rollout.ProcessGroup(ocfg, old)
		if err != nil {
			w.Abort()
			return RescoreStep{}, nil, fmt.Errorf("rescore step %d: the recorded rewards: %w", st.step, err)
		}
		change.WasDBar = ocfg.DBar
		diff.add(was, res)
		re.group(res, len(files.Planner), len(files.Executor))
		change.Rollouts += len(g.records)
	}
	if err := w.Commit(ctx); err != nil {
		return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
	}
	if change.Excluded == len(st.groups) && cfg.Mode.TrainsExecutor() {
		change.WasDBar = was.DBar // no group held statistics
	}
	re.summary(&sum, cfg.Mode.TrainsExecutor(), dbar)
	sum.Usage.Price(cfg.Prices)
	if err := cfg.Sink.WriteSummary(ctx, sum); err != nil {
		return RescoreStep{}, nil, fmt.Errorf("rescore step %d: %w", st.step, err)
	}
	if cfg.Store != nil {
		if err := cfg.Store.PutStats(ctx, cfg.Run, st.step, re.stats); err != nil {
			return RescoreStep{}, nil, fmt.Errorf("rescore step %d: store: %w", st.step, err)
		}
		files := ""
		if cfg.FilesDir != "" {
			files = rollout.StepDir(cfg.FilesDir, st.step)
		} else if l, ok := cfg.Sink.(interface{ StepLocation(int) string }); ok {
			files = l.StepLocation(st.step)
		}
		rec := store.StepRecord{Step: st.step, Status: store.StepWritten, Rollouts: sum.Rollouts, DBar: sum.DBar, ObservedD: d, Files: files, Summary: &sum}
		if err := cfg.Store.PutStep(ctx, cfg.Run, rec); err != nil {
			return RescoreStep{}, nil, fmt.Errorf("rescore step %d: store: %w", st.step, err)
		}
	}
	change.Roles = diff.roles(cfg.Mode)
	change.Seconds = time.Since(start).Seconds()
	return change, d, nil
}

// beginStepWriter starts a step in sink, piece by piece when it streams.
func beginStepWriter(ctx context.Context, sink rollout.Sink, step int) (rollout.StepWriter, error) {
	if ss, ok := sink.(rollout.StreamSink); ok {
		w, err := ss.BeginStep(ctx, step)
		if err != nil {
			return nil, fmt.Errorf("rescore step %d: %w", step, err)
		}
		return w, nil
	}
	return &gatherWriter{sink: sink, step: step}, nil
}

// recordedRewards are the rewards of a record's scores as ProcessGroup
// takes them.
func recordedRewards(r *rollout.RolloutRecord, mode rollout.Mode) rollout.RolloutRewards {
	out := rollout.RolloutRewards{Main: r.Scores.Main}
	if mode == rollout.ModeSingle {
		return out
	}
	out.Subs = make([]float64, len(r.Scores.Subs))
	for i, s := range r.Scores.Subs {
		out.Subs[i] = s.Reward
	}
	return out
}

// scores returns r's scores under the new settings, as Scoring.Score
// would have given them: format validity as recorded, r_correct recorded
// or judged again, r_expert recorded, judged again or the fallback's.
// Judge failures are recorded in the scores, never returned.
func (cfg RescoreConfig) scores(ctx context.Context, r *rollout.RolloutRecord) rollout.RolloutScores {
	sc := r.Scores
	sc.Subs = slices.Clone(r.Scores.Subs) // nil stays nil, empty stays empty (the line keeps its bytes)
	if cfg.Scorer != nil {
		sc.Verdict, sc.ScoreError, sc.Correct = nil, "", 0
		if sc.FormatOK {
			v, err := cfg.Scorer.Score(ctx, r.Question, r.Tree.Answer, r.GoldAnswer)
			if err != nil {
				sc.ScoreError = fmt.Sprintf("score answer: %v", err)
			} else {
				sc.Verdict = &v
				sc.Correct = rollout.ClampUnit(v.Correct)
			}
		}
	}
	sc.Main = cfg.Weights.MainReward(sc.FormatOK, sc.Correct)
	if !cfg.Mode.TrainsExecutor() {
		return sc
	}
	var wg sync.WaitGroup
	for i := range sc.Subs {
		sub := &sc.Subs[i]
		if !sub.FormatOK {
			continue
		}
		var task, report string
		if i < len(r.Tree.Executors) && r.Tree.Executors[i] != nil {
			task, report = r.Tree.Executors[i].Task, r.Tree.Executors[i].Final
		}
		wg.Go(func() {
			switch {
			case cfg.Expert != nil:
				score, raw, err := rollout.ExpertScore(ctx, cfg.Expert, cfg.ExpertFallback, task, report, sub.FormatOK, sc.Correct)
				sub.Expert, sub.ExpertRaw, sub.ExpertError = score, raw, ""
				if err != nil {
					sub.ExpertError = err.Error()
				}
			case !cfg.KeepExpert:
				sub.Expert, sub.ExpertRaw, sub.ExpertError = cfg.ExpertFallback.Expert(sub.FormatOK, sc.Correct), "", ""
			}
			sub.Reward = cfg.Weights.SubReward(sub.FormatOK, sc.Correct, sub.Expert)
		})
	}
	wg.Wait()
	return sc
}
