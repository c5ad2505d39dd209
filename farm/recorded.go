package farm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// StoreFile is the embedded store's file name inside a run directory.
const StoreFile = "store.db"

// ErrUnreadableRun marks a recorded run that cannot be read as one (no
// store, a corrupt store, a run of another version): the user's mistake,
// not the machine's. The error's text is its cause's alone.
var ErrUnreadableRun = errors.New("unreadable recorded run")

// unreadableError is an ErrUnreadableRun whose message is its cause's.
type unreadableError struct{ err error }

func (e unreadableError) Error() string   { return e.err.Error() }
func (e unreadableError) Unwrap() []error { return []error{e.err, ErrUnreadableRun} }

func unreadable(err error) error { return unreadableError{err} }

// StoreOpener opens the store at a URL: the composition root passes its
// backends, which the farm does not choose.
type StoreOpener func(ctx context.Context, url string) (store.Store, error)

// CheckRunDirs checks, for command, that from is a run directory (with
// its store.db when withStore) and out a free place for the new run.
func CheckRunDirs(command, from, out string, withStore bool) error {
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
	return CheckNewDir(command, out)
}

// CheckNewDir checks that out, a command's new directory, does not exist
// or is empty.
func CheckNewDir(command, out string) error {
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

// RecordedStore is a read-only view of a recorded run's store: a copy of
// its file, so that opening it (migrations included) never changes the
// recorded run.
type RecordedStore struct {
	Store store.Store
	dir   string
}

// Close closes the store and removes the copy.
func (r *RecordedStore) Close() {
	if r.Store != nil {
		r.Store.Close()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// OpenCopy opens, with open, a copy of the SQLite store in file (where
// names it in errors) into r.
func (r *RecordedStore) OpenCopy(ctx context.Context, file, where string, open StoreOpener) error {
	if _, err := os.Stat(file); err != nil {
		return unreadable(fmt.Errorf("%s: the run's store cannot be read: %w", where, err))
	}
	var err error
	if r.dir, err = os.MkdirTemp("", "mgrpo-rescore-"); err != nil {
		return fmt.Errorf("%w", err)
	}
	// The copy leaves out the results of the steps in progress
	// (file.results/), which nothing read from a recorded run needs: in
	// the copy those steps hold no results.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := CopyIfPresent(file+suffix, filepath.Join(r.dir, StoreFile+suffix)); err != nil {
			return err
		}
	}
	if r.Store, err = open(ctx, "sqlite://"+filepath.ToSlash(filepath.Join(r.dir, StoreFile))); err != nil {
		return unreadable(fmt.Errorf("%s: the run's store cannot be read: %w", where, err))
	}
	return nil
}

// OpenRecordedRun opens the recorded run's store — a copy of from's
// store.db (storeURL ""), of a sqlite:// file (both opened with openFile),
// or the Redis a redis:// URL names, read in place (with openShared;
// nothing here writes to it) — and reads the record of the run whose step
// files are in from: the store's one run, or among several the one named
// in from's rollouts.jsonl (else from's directory name, the default run
// name). It returns the store, the run's id and its spec; a run that
// cannot be read is an ErrUnreadableRun.
func OpenRecordedRun(ctx context.Context, from, storeURL string, openFile, openShared StoreOpener) (*RecordedStore, string, RunSpec, error) {
	var spec RunSpec
	r := &RecordedStore{}
	fail := func(err error) (*RecordedStore, string, RunSpec, error) {
		r.Close()
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
		return fail(unreadable(fmt.Errorf("--store %q: want the run's sqlite://, redis:// or rediss:// store", redact.URL(storeURL))))
	}
	var err error
	if file != "" {
		if err := r.OpenCopy(ctx, file, where, openFile); err != nil {
			return fail(err)
		}
	} else if r.Store, err = openShared(ctx, storeURL); err != nil {
		return fail(unreadable(fmt.Errorf("the run's store cannot be read: %w", err)))
	}
	ids, err := r.Store.RunIDs(ctx)
	if err != nil {
		return fail(unreadable(fmt.Errorf("%s: the run's store cannot be read: %w", where, err)))
	}
	id, err := recordedRunID(from, where, ids)
	if err != nil {
		return fail(unreadable(err))
	}
	rec, err := r.Store.Run(ctx, id)
	if err != nil {
		return fail(unreadable(fmt.Errorf("%s: %w", where, err)))
	}
	if rec.Version != store.RunRecordVersion {
		return fail(unreadable(fmt.Errorf("%s was written by another mgrpo version (run record version %d, this one reads %d): use the mgrpo that wrote it", from, rec.Version, store.RunRecordVersion)))
	}
	if spec, err = ReadRunSpec(rec); err != nil {
		return fail(unreadable(fmt.Errorf("%s: %w", from, err)))
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

// CopyIfPresent copies the file src to dst; a missing src is no error.
func CopyIfPresent(src, dst string) error {
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

// WriteJSONLines writes rows as JSON Lines to path.
func WriteJSONLines[T any](path string, rows []T) error {
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
