package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The file names inside a step directory.
const (
	PlannerFile         = "planner.jsonl"
	ExecutorFile        = "executor.jsonl"
	StatsFile           = "stats.jsonl"
	RolloutsFile        = "rollouts.jsonl"
	PlannerParquetFile  = "planner.parquet"
	ExecutorParquetFile = "executor.parquet"
	StatsParquetFile    = "stats.parquet"
)

// ErrStepExists is returned when a step directory is already present; steps
// are never overwritten.
var ErrStepExists = errors.New("step directory already exists")

// StepFiles is everything written for one step. The samples a Farm hands
// to its sink may share token slices with each other (a duplicated
// executor entry shares its original's); they are read-only.
type StepFiles struct {
	Planner  []Sample
	Executor []Sample
	Stats    []QueryStats
	// Rollouts are the rollout trees as JSON values, one line each; they are
	// written compacted and otherwise as given, so the caller makes them
	// deterministic.
	Rollouts []json.RawMessage

	// RolloutsCompact says that every Rollouts entry came from
	// json.Marshal, which writes valid JSON without insignificant
	// whitespace, so DirSink need not compact (and re-validate) it again.
	// The farm sets it; leave it false for values built any other way.
	RolloutsCompact bool
}

// Sink receives the files and summaries of finished steps.
type Sink interface {
	// WriteStep stores the files of step. It is not idempotent: a step that
	// was already written is an error wrapping ErrStepExists. A failed call
	// leaves nothing visible. Implementations need not be safe for
	// concurrent calls for the same step, and must not modify files.
	WriteStep(ctx context.Context, step int, files StepFiles) error
	// WriteSummary stores the summary of a step whose files were written.
	// It is idempotent by step: a second summary of the same step replaces
	// the first. Not safe for concurrent use.
	WriteSummary(ctx context.Context, sum StepSummary) error
}

// DirSink writes each step to Dir/step-NNNNNN/ (see StepDir).
type DirSink struct {
	// Dir is the output directory; it is created when missing.
	Dir string
	// Parquet also writes planner.parquet, executor.parquet and stats.parquet.
	Parquet bool
}

var _ Sink = DirSink{}

// StepDir returns the directory of step under out: out/step-000001 for
// step 1.
func StepDir(out string, step int) string {
	return filepath.Join(out, fmt.Sprintf("step-%06d", step))
}

// WriteStep writes the step's files into a hidden temporary directory inside
// Dir, each through a temporary name renamed when complete and synced, and
// then renames the directory to its final name, so a step directory only
// ever holds complete files. A process killed mid-write can leave a hidden
// ".step-NNNNNN.tmp-*" directory behind, never a partial step directory;
// readers skip names starting with a dot. The bytes written depend only on
// files.
func (s DirSink) WriteStep(ctx context.Context, step int, files StepFiles) error {
	w, err := s.BeginStep(ctx, step)
	if err != nil {
		return err
	}
	if err := w.Append(ctx, files); err != nil {
		return err
	}
	return w.Commit(ctx)
}

// writeFileAtomic writes path through a temporary file in the same
// directory, synced and renamed when complete.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// syncDir flushes a directory's entries to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeJSONL writes one JSON object per line, keys in struct order, without
// HTML escaping.
func writeJSONL[T any](w io.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return nil
}

// writeRawJSONL writes each value compacted on its own line; values known
// to be compact already are written as they are.
func writeRawJSONL(w io.Writer, rows []json.RawMessage, compact bool) error {
	if compact {
		for _, r := range rows {
			if _, err := w.Write(r); err != nil {
				return err
			}
			if _, err := w.Write([]byte{'\n'}); err != nil {
				return err
			}
		}
		return nil
	}
	var buf bytes.Buffer
	for i, r := range rows {
		buf.Reset()
		if err := json.Compact(&buf, r); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		buf.WriteByte('\n')
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// ReadSamplesJSONL reads a planner.jsonl or executor.jsonl file.
func ReadSamplesJSONL(path string) ([]Sample, error) { return readJSONL[Sample](path) }

// ReadStatsJSONL reads a stats.jsonl file.
func ReadStatsJSONL(path string) ([]QueryStats, error) { return readJSONL[QueryStats](path) }

// readJSONL decodes one value per line of path; unknown keys are errors.
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return decodeJSONL[T](f, path)
}

// DecodeSamplesJSONL reads samples in planner.jsonl's format from r; name
// names the input in errors (with the line).
func DecodeSamplesJSONL(r io.Reader, name string) ([]Sample, error) {
	return decodeJSONL[Sample](r, name)
}

// decodeJSONL decodes one value per line of r; unknown keys are errors.
func decodeJSONL[T any](r io.Reader, path string) ([]T, error) {
	br := bufio.NewReader(r)
	var out []T
	for line := 1; ; line++ {
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s:%d: %w", path, line, err)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			var v T
			if derr := dec.Decode(&v); derr != nil {
				return nil, fmt.Errorf("read %s:%d: %w", path, line, derr)
			}
			out = append(out, v)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
	}
}
