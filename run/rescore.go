package run

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/sim"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/backends"
)

// RescoreFlags are the configuration flags `mgrpo rescore` takes: those
// of the settings it recomputes (d̄, dropping zero-variance groups,
// r_expert's fallback, the judge), named as `mgrpo train` names them.
// The reward weights are YAML keys (rewards.*), read from --config.
var RescoreFlags = []string{"dbar", "drop-zero-variance", "expert-fallback", "judge-url", "judge-model"}

// RescoreSettings copies from c into into the keys a rescore may change:
// rewards.*, dbar, drop_zero_variance and judge.* (a --config file's, over
// the recorded run's).
func RescoreSettings(into *Config, c Config) {
	into.Rewards, into.DBar, into.DropZeroVariance, into.Judge = c.Rewards, c.DBar, c.DropZeroVariance, c.Judge
}

// RescoreOptions say which run Rescore recomputes, where the new run
// goes and with what settings.
type RescoreOptions struct {
	// From is the recorded run's directory, Out the new run's (it must
	// not exist, or be empty).
	From, Out string
	// Store is the recorded run's store as the run used it (--store):
	// "" for From's store.db; a redis:// or rediss:// URL (its password,
	// when the URL has none, from MGRPO_STORE_PASSWORD) is read, never
	// written; a sqlite:// file is read from a copy.
	Store string
	// Settings returns the new run's configuration from the recorded
	// run's, whose judge is cleared: a rescore calls a judge only when
	// asked. Nil: unchanged settings.
	Settings func(recorded Config) (Config, error)
	Hooks
	// OnStep, when set, receives each step's changes.
	OnStep func(farm.RescoreStep)
}

// RescoreResult is what a rescore did.
type RescoreResult struct {
	Steps []farm.RescoreStep
	// JudgeCalls counts the judge's answers asked of the model, JudgeCached
	// those found in the new or the recorded run's store.
	JudgeCalls, JudgeCached int64
	Rollouts                int
	Seconds                 float64
}

// RescoreChangesFile is the new run's per-step record of what the rescore
// changed (farm.RescoreStep lines).
const RescoreChangesFile = "rescore.jsonl"

// Rescore is `mgrpo rescore`: it recomputes the run in opts.From with new
// reward, judge, d̄ and zero-variance settings into the new run directory
// opts.Out (samples, statistics, rollouts.jsonl with the new scores,
// summary.jsonl, its store with the judge's answers cached, and
// rescore.jsonl). A directory that is no run, a run of another version or
// a corrupt store, or settings that need what the run did not keep, are
// configuration errors (exit 2) and leave nothing on disk: the new run is
// written into a hidden directory renamed into place at the end.
func Rescore(ctx context.Context, opts RescoreOptions) (RescoreResult, error) {
	logger := opts.logger()
	start := time.Now()
	if opts.Out == "" {
		return RescoreResult{}, invalid(errors.New("rescore: --out NEW_DIR is required"))
	}
	if err := checkRunDirs("rescore", opts.From, opts.Out, opts.Store == ""); err != nil {
		return RescoreResult{}, invalid(err)
	}
	src, runID, spec, err := openRecordedRun(ctx, opts.From, opts.Store)
	if err != nil {
		return RescoreResult{}, err
	}
	defer src.close()
	recorded, err := ConfigFromRunRecord(spec.Config)
	if err != nil {
		return RescoreResult{}, invalid(fmt.Errorf("rescore %s: %w", opts.From, err))
	}
	next := recorded
	next.Judge = EndpointConfig{Dialect: "openai"}
	if opts.Settings != nil {
		if next, err = opts.Settings(next); err != nil {
			return RescoreResult{}, err
		}
	}
	fc := farm.RescoreConfig{From: opts.From, Run: runID, Seed: recorded.Seed, GroupSize: recorded.GroupSize,
		WasDropZeroVariance: recorded.DropZeroVariance, DropZeroVariance: next.DropZeroVariance,
		Weights: next.weights(), KeepExpert: len(recorded.Judge.URLs) > 0, Prices: next.Prices, Tasks: spec.Tasks, Logger: logger, OnStep: opts.OnStep}
	if fc.Mode, err = rollout.ParseMode(recorded.Mode); err != nil {
		return RescoreResult{}, invalid(fmt.Errorf("rescore %s: the recorded mode: %w", opts.From, err))
	}
	if fc.DBar, err = rollout.ParseDBar(next.DBar); err != nil {
		return RescoreResult{}, invalid(fmt.Errorf("--dbar: %w", err))
	}
	if fc.ExpertFallback, err = rollout.ParseExpertFallback(next.Rewards.ExpertFallback); err != nil {
		return RescoreResult{}, invalid(fmt.Errorf("--expert-fallback: %w", err))
	}
	if err := fc.Weights.Validate(); err != nil {
		return RescoreResult{}, invalid(fmt.Errorf("rewards: %w", err))
	}
	if recorded.GroupSize < 1 {
		return RescoreResult{}, invalid(fmt.Errorf("rescore %s: the recorded group size is %d", opts.From, recorded.GroupSize))
	}

	// The new run is written beside its final place and renamed there.
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(opts.Out)), "."+filepath.Base(filepath.Clean(opts.Out))+".rescore-")
	if err != nil {
		return RescoreResult{}, fmt.Errorf("rescore: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	dst, err := backends.Open(ctx, "sqlite://"+filepath.ToSlash(filepath.Join(tmp, StoreFile)))
	if err != nil {
		return RescoreResult{}, fmt.Errorf("rescore: the new run's store: %w", err)
	}
	defer dst.Close()
	judge, closeJudge, err := rescoreJudge(ctx, next, logger, dst, src.st)
	if err != nil {
		return RescoreResult{}, err
	}
	defer closeJudge()
	if judge != nil {
		fc.Scorer = rolloutScorer{score.Cascade(score.GAIAExact, score.NewCorrectIncorrectJudge(judge))}
		fc.Expert = score.ExpertJudge{Model: judge}
		fc.KeepExpert = false
	}
	// The new run's record holds its settings; its judge is the one the
	// rescore used (none: the recorded verdicts were kept).
	record := next
	if judge == nil {
		record.Judge = recorded.Judge
	}
	if fc.RunConfig, err = record.RunRecordConfig(); err != nil {
		return RescoreResult{}, err
	}
	fc.Sink = rollout.DirSink{Dir: tmp, Parquet: recorded.Format == "parquet"}
	fc.Store, fc.FilesDir = dst, opts.Out
	steps, err := farm.Rescore(ctx, fc)
	if errors.Is(err, farm.ErrNotRescorable) {
		return RescoreResult{}, invalid(err)
	}
	if err != nil {
		return RescoreResult{}, err
	}
	res := RescoreResult{Steps: steps}
	for _, s := range steps {
		res.Rollouts += s.Rollouts
	}
	if judge != nil {
		res.JudgeCalls, res.JudgeCached = judge.calls.Load(), judge.cached.Load()
	}
	if err := writeJSONLines(filepath.Join(tmp, RescoreChangesFile), steps); err != nil {
		return res, err
	}
	if err := copyIfPresent(filepath.Join(opts.From, "tasks.jsonl"), filepath.Join(tmp, "tasks.jsonl")); err != nil {
		return res, err
	}
	if err := dst.Close(); err != nil {
		return res, fmt.Errorf("rescore: close the new run's store: %w", err)
	}
	os.Remove(opts.Out) // an empty directory given as --out
	if err := os.Rename(tmp, opts.Out); err != nil {
		return res, fmt.Errorf("rescore: %w", err)
	}
	done = true
	res.Seconds = time.Since(start).Seconds()
	logger.Info("rescored", "from", opts.From, "out", opts.Out, "steps", len(steps), "rollouts", res.Rollouts,
		"judge_calls", res.JudgeCalls, "judge_cached", res.JudgeCached, "seconds", res.Seconds)
	return res, nil
}

// checkRunDirs checks, for command, that from is a run directory (with
// its store.db when withStore) and out a free place for the new run.
func checkRunDirs(command, from, out string, withStore bool) error {
	if from == "" {
		return fmt.Errorf("%s: RUN_DIR is required", command)
	}
	if filepath.Clean(from) == filepath.Clean(out) {
		return fmt.Errorf("%s: --out %s is RUN_DIR itself: the new run goes into a new directory", command, out)
	}
	info, err := os.Stat(from)
	if err != nil || !info.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", command, from)
	}
	names := []string{rollout.SummaryFile}
	if withStore {
		names = append(names, StoreFile)
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(from, name)); err != nil {
			if name == StoreFile && (command == "rescore" || command == "replay") {
				return fmt.Errorf("%s: %s has no %s: a run kept in Redis is read with --store URL, the URL the run used (mgrpo rollout or train --out DIR writes %s otherwise)", command, from, name, name)
			}
			return fmt.Errorf("%s: %s is not a run directory of this mgrpo (no %s; mgrpo rollout or train --out DIR writes one)", command, from, name)
		}
	}
	return checkNewDir(command, out)
}

// checkNewDir checks that out, a command's new directory, does not exist
// or is empty.
func checkNewDir(command, out string) error {
	entries, err := os.ReadDir(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %s: %w", out, err)
	case len(entries) > 0:
		return fmt.Errorf("--out %s exists and is not empty: %s writes a new run directory", out, command)
	}
	return nil
}

// recordedStore is a read-only view of a recorded run's store: a copy of
// its file, so that opening it (migrations included) never changes the
// recorded run.
type recordedStore struct {
	st  store.Store
	dir string
}

func (r *recordedStore) close() {
	if r.st != nil {
		r.st.Close()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// openCopy opens a copy of the SQLite store in file (where names it in
// errors) into r.
func (r *recordedStore) openCopy(ctx context.Context, file, where string) error {
	if _, err := os.Stat(file); err != nil {
		return invalid(fmt.Errorf("%s: the run's store cannot be read: %w", where, err))
	}
	var err error
	if r.dir, err = os.MkdirTemp("", "mgrpo-rescore-"); err != nil {
		return fmt.Errorf("%w", err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := copyIfPresent(file+suffix, filepath.Join(r.dir, StoreFile+suffix)); err != nil {
			return err
		}
	}
	if r.st, err = backends.Open(ctx, "sqlite://"+filepath.ToSlash(filepath.Join(r.dir, StoreFile))); err != nil {
		return invalid(fmt.Errorf("%s: the run's store cannot be read: %w", where, err))
	}
	return nil
}

// openRecordedRun opens the recorded run's store — a copy of from's
// store.db (storeURL ""), of a sqlite:// file, or the Redis a redis://
// URL names, read in place (nothing here writes to it) — and reads the
// record of the run whose step files are in from: the store's one run,
// or among several the one named in from's rollouts.jsonl (else from's
// directory name, the default run name).
func openRecordedRun(ctx context.Context, from, storeURL string) (*recordedStore, string, farm.RunSpec, error) {
	var spec farm.RunSpec
	r := &recordedStore{}
	fail := func(err error) (*recordedStore, string, farm.RunSpec, error) {
		r.close()
		return nil, "", spec, err
	}
	where := filepath.Join(from, StoreFile)
	file := where
	lower := strings.ToLower(storeURL)
	switch {
	case storeURL == "":
	case strings.HasPrefix(lower, "sqlite://"):
		file, where = filepath.FromSlash(storeURL[len("sqlite://"):]), redact.URL(storeURL)
	case strings.HasPrefix(lower, "redis://"), strings.HasPrefix(lower, "rediss://"):
		where = redact.URL(storeURL)
		file = ""
	default:
		return fail(invalid(fmt.Errorf("--store %q: want the run's sqlite://, redis:// or rediss:// store", redact.URL(storeURL))))
	}
	var err error
	if file != "" {
		if err := r.openCopy(ctx, file, where); err != nil {
			return fail(err)
		}
	} else if r.st, err = OpenStore(ctx, Config{Store: storeURL}, os.Getenv); err != nil {
		return fail(invalid(fmt.Errorf("the run's store cannot be read: %w", err)))
	}
	ids, err := r.st.RunIDs(ctx)
	if err != nil {
		return fail(invalid(fmt.Errorf("%s: the run's store cannot be read: %w", where, err)))
	}
	id, err := recordedRunID(from, where, ids)
	if err != nil {
		return fail(invalid(err))
	}
	rec, err := r.st.Run(ctx, id)
	if err != nil {
		return fail(invalid(fmt.Errorf("%s: %w", where, err)))
	}
	if rec.Version != store.RunRecordVersion {
		return fail(invalid(fmt.Errorf("%s was written by another mgrpo version (run record version %d, this one reads %d): use the mgrpo that wrote it", from, rec.Version, store.RunRecordVersion)))
	}
	if spec, err = farm.ReadRunSpec(rec); err != nil {
		return fail(invalid(fmt.Errorf("%s: %w", from, err)))
	}
	return r, rec.ID, spec, nil
}

// recordedRunID picks, among the runs of the store at where, the run of
// the directory from: the only one, or the one named by the first rollout
// of from's first step (its task's run), else by from's directory name.
func recordedRunID(from, where string, ids []string) (string, error) {
	if len(ids) == 1 {
		return ids[0], nil
	}
	name := filepath.Base(filepath.Clean(from))
	if sums, err := rollout.ReadSummaries(filepath.Join(from, rollout.SummaryFile)); err == nil && len(sums) > 0 {
		if n := firstRolloutRun(filepath.Join(rollout.StepDir(from, sums[0].Step), rollout.RolloutsFile)); n != "" {
			name = n
		}
	}
	if slices.Contains(ids, name) {
		return name, nil
	}
	return "", fmt.Errorf("%s holds %d runs and none is %q, the run of %s", where, len(ids), name, from)
}

// firstRolloutRun returns the run named by the first line of a
// rollouts.jsonl file, "" when it cannot be read.
func firstRolloutRun(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 1<<16).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return ""
	}
	var rec struct {
		Task struct {
			Run string `json:"run"`
		} `json:"task"`
	}
	if json.Unmarshal(line, &rec) != nil {
		return ""
	}
	return rec.Task.Run
}

// copyIfPresent copies the file src to dst; a missing src is no error.
func copyIfPresent(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rescore: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("rescore: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("rescore: copy %s: %w", src, err)
	}
	return out.Close()
}

// rescoreJudge returns the judge of c, its answers cached in the new
// run's store (dst) and looked up in the recorded run's (src) too; nil
// without a judge. A sim judge starts the simulated model alone.
func rescoreJudge(ctx context.Context, c Config, h *slog.Logger, dst, src store.Cache) (*cachedJudge, func(), error) {
	if len(c.Judge.URLs) == 0 {
		if c.Judge.Model != "" {
			return nil, nil, invalid(errors.New("--judge-model without --judge-url: name the judge's endpoint (or sim)"))
		}
		return nil, func() {}, nil
	}
	closers := []func(){}
	closeAll := func() {
		for _, f := range slices.Backward(closers) {
			f()
		}
	}
	if c.SimJudge() {
		w, err := sim.Start(sim.Options{Seed: c.Seed, Dialect: c.Executor.Dialect})
		if err != nil {
			return nil, nil, fmt.Errorf("rescore: the simulated judge: %w", err)
		}
		closers = append(closers, func() { w.Close() })
		c.Judge.URLs, c.Judge.Dialect = []string{w.LLMURL}, "openai"
		if c.Judge.Model == "" {
			c.Judge.Model = SimModel
		}
		h.Info("simulated judge started", "llm", w.LLMURL)
	}
	if c.Judge.Model == "" {
		closeAll()
		return nil, nil, invalid(errors.New("--judge-url without --judge-model: name the judge's model"))
	}
	cl, err := newClient("judge", c.Judge, false, nil, nil, nil)
	if err != nil {
		closeAll()
		return nil, nil, invalid(err)
	}
	closers = append(closers, cl.Close)
	return &cachedJudge{model: score.LLMChat{Client: cl}, name: c.Judge.Model, dst: dst, src: src}, closeAll, nil
}

// cachedJudge is a judge model whose answers are kept in the new run's
// store, keyed by the model and the exact prompt: a rescore asks the model
// only what neither the new nor the recorded run's store answers.
type cachedJudge struct {
	model         score.ChatModel
	name          string
	dst, src      store.Cache
	calls, cached atomic.Int64
}

var _ score.ChatModel = (*cachedJudge)(nil)

// judgeCacheTTL keeps a judge's answers as long as the run directory.
const judgeCacheTTL = 100 * 365 * 24 * time.Hour

// judgeCacheKey is a judge answer's cache key.
func judgeCacheKey(model, system, user string) string {
	h := sha256.New()
	for _, s := range []string{model, system, user} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "judge/" + hex.EncodeToString(h.Sum(nil))
}

func (j *cachedJudge) Complete(ctx context.Context, system, user string) (string, error) {
	key := judgeCacheKey(j.name, system, user)
	for i, c := range []store.Cache{j.dst, j.src} {
		if c == nil {
			continue
		}
		if v, ok, err := c.Get(ctx, key); err == nil && ok {
			j.cached.Add(1)
			if i == 1 && j.dst != nil {
				if err := j.dst.Set(ctx, key, v, judgeCacheTTL); err != nil {
					return "", fmt.Errorf("cache the judge's answer: %w", err)
				}
			}
			return string(v), nil
		}
	}
	j.calls.Add(1)
	out, err := j.model.Complete(ctx, system, user)
	if err != nil {
		return "", err
	}
	if j.dst != nil {
		if err := j.dst.Set(ctx, key, []byte(out), judgeCacheTTL); err != nil {
			return "", fmt.Errorf("cache the judge's answer: %w", err)
		}
	}
	return out, nil
}

// writeJSONLines writes rows as JSON Lines to path.
func writeJSONLines[T any](path string, rows []T) error {
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
