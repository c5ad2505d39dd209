package rollout

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
)

// StepWriter receives one step's files piece by piece, so a step need not
// be held in memory whole: the farm appends each query's samples as it
// assembles them. Nothing is visible until Commit; Abort (or a failed
// Append or Commit) leaves nothing behind.
type StepWriter interface {
	// Append adds files' rows after those appended before.
	Append(ctx context.Context, files StepFiles) error
	// Commit makes the step visible, complete. A step is committed once.
	Commit(ctx context.Context) error
	// Abort discards what was appended; it is a no-op after Commit.
	Abort()
}

// StreamSink is a Sink that also writes a step piece by piece. The bytes
// a step's files hold are the same whether it was written with WriteStep or
// appended in pieces.
type StreamSink interface {
	Sink
	// BeginStep starts writing step; a step already written is an error
	// wrapping ErrStepExists.
	BeginStep(ctx context.Context, step int) (StepWriter, error)
}

var _ StreamSink = DirSink{}

// dirStepWriter writes one step of a DirSink into a hidden temporary
// directory renamed to the step's name on Commit.
type dirStepWriter struct {
	step         int
	dir, tmp     string
	final        string
	files        []*os.File
	bufs         []*bufio.Writer
	lines        [4]int // rows written per JSONL file, for error messages
	parquet      bool
	planPQ       *parquet.GenericWriter[Sample]
	execPQ       *parquet.GenericWriter[Sample]
	statsPQ      *parquet.GenericWriter[QueryStats]
	done, failed bool
}

// The JSONL files in the order dirStepWriter holds them.
var jsonlFiles = [...]string{PlannerFile, ExecutorFile, StatsFile, RolloutsFile}

// BeginStep creates the step's temporary directory and files.
func (s DirSink) BeginStep(ctx context.Context, step int) (_ StepWriter, err error) {
	if step < 0 {
		return nil, fmt.Errorf("write step %d: negative step", step)
	}
	w := &dirStepWriter{step: step, dir: s.Dir, final: StepDir(s.Dir, step), parquet: s.Parquet}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("write step %d: %w", step, err)
	}
	if _, err := os.Lstat(w.final); err == nil {
		return nil, fmt.Errorf("write step %d: %s: %w", step, w.final, ErrStepExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("write step %d: %w", step, err)
	}
	if w.tmp, err = os.MkdirTemp(s.Dir, "."+filepath.Base(w.final)+".tmp-"); err != nil {
		return nil, fmt.Errorf("write step %d: %w", step, err)
	}
	defer func() {
		if err != nil {
			w.Abort()
		}
	}()
	names := jsonlFiles[:]
	if s.Parquet {
		names = append(names, PlannerParquetFile, ExecutorParquetFile, StatsParquetFile)
	}
	for _, name := range names {
		f, err := os.OpenFile(filepath.Join(w.tmp, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, fmt.Errorf("write step %d: %w", step, err)
		}
		w.files = append(w.files, f)
		w.bufs = append(w.bufs, bufio.NewWriterSize(f, 1<<20))
	}
	if s.Parquet {
		w.planPQ = newParquetWriter[Sample](w.bufs[4])
		w.execPQ = newParquetWriter[Sample](w.bufs[5])
		w.statsPQ = newParquetWriter[QueryStats](w.bufs[6])
	}
	return w, nil
}

// Append writes files' rows to the step's files.
func (w *dirStepWriter) Append(ctx context.Context, files StepFiles) error {
	if w.done || w.failed {
		return fmt.Errorf("write step %d: append after commit or failure", w.step)
	}
	if err := ctx.Err(); err != nil {
		return w.fail(err)
	}
	writes := [...]func(io.Writer) error{
		func(o io.Writer) error { return writeSamplesJSONL(o, files.Planner) },
		func(o io.Writer) error { return writeSamplesJSONL(o, files.Executor) },
		func(o io.Writer) error { return writeJSONL(o, files.Stats) },
		func(o io.Writer) error { return writeRawJSONL(o, files.Rollouts, files.RolloutsCompact) },
	}
	counts := [...]int{len(files.Planner), len(files.Executor), len(files.Stats), len(files.Rollouts)}
	for i, write := range writes {
		if err := write(w.bufs[i]); err != nil {
			return w.fail(fmt.Errorf("%s after line %d: %w", jsonlFiles[i], w.lines[i], err))
		}
		w.lines[i] += counts[i]
	}
	if w.parquet {
		if err := appendParquet(w.planPQ, files.Planner); err != nil {
			return w.fail(fmt.Errorf("%s: %w", PlannerParquetFile, err))
		}
		if err := appendParquet(w.execPQ, files.Executor); err != nil {
			return w.fail(fmt.Errorf("%s: %w", ExecutorParquetFile, err))
		}
		if err := appendParquet(w.statsPQ, files.Stats); err != nil {
			return w.fail(fmt.Errorf("%s: %w", StatsParquetFile, err))
		}
	}
	return nil
}

// Commit flushes and syncs every file, then renames the directory to the
// step's name.
func (w *dirStepWriter) Commit(ctx context.Context) error {
	if w.done || w.failed {
		return fmt.Errorf("write step %d: commit after commit or failure", w.step)
	}
	if w.parquet {
		for _, pw := range []interface{ Close() error }{w.planPQ, w.execPQ, w.statsPQ} {
			if err := pw.Close(); err != nil {
				return w.fail(fmt.Errorf("write parquet: %w", err))
			}
		}
	}
	for i, f := range w.files {
		if err := w.bufs[i].Flush(); err != nil {
			return w.fail(err)
		}
		if err := f.Sync(); err != nil {
			return w.fail(err)
		}
		if err := f.Close(); err != nil {
			return w.fail(err)
		}
	}
	w.files = nil
	if err := os.Chmod(w.tmp, 0o755); err != nil {
		return w.fail(err)
	}
	if err := syncDir(w.tmp); err != nil {
		return w.fail(err)
	}
	if _, err := os.Lstat(w.final); err == nil {
		return w.fail(fmt.Errorf("%s: %w", w.final, ErrStepExists))
	}
	if err := os.Rename(w.tmp, w.final); err != nil {
		return w.fail(err)
	}
	w.done = true
	if err := syncDir(w.dir); err != nil {
		return fmt.Errorf("write step %d: %w", w.step, err)
	}
	return nil
}

// fail aborts the step and returns err as the step's error.
func (w *dirStepWriter) fail(err error) error {
	w.Abort()
	w.failed = true
	return fmt.Errorf("write step %d: %w", w.step, err)
}

// Abort closes and removes the temporary directory.
func (w *dirStepWriter) Abort() {
	if w.done {
		return
	}
	for _, f := range w.files {
		f.Close()
	}
	w.files = nil
	if w.tmp != "" {
		os.RemoveAll(w.tmp)
	}
}

// newParquetWriter returns the writer of one Parquet file of a step.
func newParquetWriter[T any](w io.Writer) *parquet.GenericWriter[T] {
	return parquet.NewGenericWriter[T](w, parquet.Compression(&parquet.Snappy), parquet.CreatedBy("mgrpo", "", ""))
}

// appendParquet writes rows to pw.
func appendParquet[T any](pw *parquet.GenericWriter[T], rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := pw.Write(rows)
	return err
}

// RemoveTempSteps removes the hidden temporary step directories a process
// killed mid-write left in out (see DirSink.WriteStep) and returns their
// names. A resumed run calls it before writing.
func RemoveTempSteps(out string) ([]string, error) {
	// Step directories, and the temporary files of files replaced whole
	// (summary.jsonl), both named ".NAME.tmp-*".
	matches, err := filepath.Glob(filepath.Join(out, ".*.tmp-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil {
			return removed, fmt.Errorf("remove leftover %s: %w", m, err)
		}
		removed = append(removed, filepath.Base(m))
	}
	return removed, nil
}

// StepLocation returns the directory of step, for the run's step records.
func (s DirSink) StepLocation(step int) string {
	if abs, err := filepath.Abs(StepDir(s.Dir, step)); err == nil {
		return abs
	}
	return StepDir(s.Dir, step)
}
