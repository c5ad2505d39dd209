package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
)

// BuildConfig configures Build.
type BuildConfig struct {
	// In is the JSONL corpus file.
	In string
	// Out is the index directory to create (or resume).
	Out string
	// BatchSize is the number of documents per index batch; 0 means 2000.
	BatchSize int
	// Restart discards an existing Out and builds from scratch.
	Restart bool
	// Progress, when set, is called after every committed batch.
	Progress func(Stats)
}

// Stats reports a build's progress.
type Stats struct {
	// Docs is the number of documents indexed so far, this run and the
	// runs it resumed included.
	Docs int64
	// Skipped counts lines that were not documents.
	Skipped int64
	// Offset and Size are the bytes of In consumed and in total.
	Offset, Size int64
	// Elapsed is the time spent by this run.
	Elapsed time.Duration
	// Resumed is true when this run continued an interrupted build.
	Resumed bool
	// Done is true once the whole file is indexed.
	Done bool
}

// checkpointFile sits in the index directory and records how far a build
// got, so an interrupted build resumes where its last batch committed.
const checkpointFile = "mgrpo-corpus-progress.json"

type checkpoint struct {
	Input   string `json:"input"`
	Size    int64  `json:"size"`
	Offset  int64  `json:"offset"`
	Docs    int64  `json:"docs"`
	Skipped int64  `json:"skipped"`
	Done    bool   `json:"done"`
}

// ErrIndexExists is returned when Out holds an index that is not a resumable
// build of In.
var ErrIndexExists = errors.New("index directory exists")

// Build indexes cfg.In into cfg.Out. It commits a batch at a time and
// records its position after each, so when it is interrupted (killed,
// ctx cancelled) running it again with the same In and Out resumes after
// the last committed batch; re-indexing a document overwrites it, so the
// overlap is harmless. A finished index is left alone and reported done;
// Restart rebuilds from scratch.
func Build(ctx context.Context, cfg BuildConfig) (Stats, error) {
	start := time.Now()
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 2000
	}
	in, err := filepath.Abs(cfg.In)
	if err != nil {
		return Stats{}, fmt.Errorf("corpus input: %w", err)
	}
	f, err := os.Open(in)
	if err != nil {
		return Stats{}, fmt.Errorf("corpus input: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Stats{}, fmt.Errorf("corpus input: %w", err)
	}
	if cfg.Restart {
		if err := os.RemoveAll(cfg.Out); err != nil {
			return Stats{}, fmt.Errorf("restart index: %w", err)
		}
	}
	cp := checkpoint{Input: in, Size: fi.Size()}
	st := Stats{Size: fi.Size()}
	var bi bleve.Index
	if _, err := os.Stat(cfg.Out); err == nil {
		old, rerr := readCheckpoint(cfg.Out)
		if rerr != nil || old.Input != in || old.Size != fi.Size() {
			return Stats{}, fmt.Errorf("%w: %s is not a build of %s (pass restart to rebuild)", ErrIndexExists, cfg.Out, cfg.In)
		}
		if old.Done {
			return Stats{Docs: old.Docs, Skipped: old.Skipped, Offset: old.Offset, Size: old.Size, Done: true}, nil
		}
		if bi, err = bleve.Open(cfg.Out); err != nil {
			return Stats{}, fmt.Errorf("resume index %s: %w", cfg.Out, err)
		}
		cp, st.Resumed = old, true
		if _, err := f.Seek(cp.Offset, io.SeekStart); err != nil {
			bi.Close()
			return Stats{}, fmt.Errorf("resume input: %w", err)
		}
	} else {
		if bi, err = bleve.New(cfg.Out, newMapping()); err != nil {
			return Stats{}, fmt.Errorf("create index %s: %w", cfg.Out, err)
		}
		if err := writeCheckpoint(cfg.Out, cp); err != nil {
			bi.Close()
			return Stats{}, err
		}
	}
	err = index(ctx, bi, bufio.NewReaderSize(f, 1<<20), &cp, cfg, func() {
		st.Docs, st.Skipped, st.Offset, st.Elapsed = cp.Docs, cp.Skipped, cp.Offset, time.Since(start)
		if cfg.Progress != nil {
			cfg.Progress(st)
		}
	})
	if cerr := bi.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close index: %w", cerr)
	}
	st.Docs, st.Skipped, st.Offset, st.Elapsed, st.Done = cp.Docs, cp.Skipped, cp.Offset, time.Since(start), cp.Done
	return st, err
}

// index reads documents from r and commits them in batches, advancing cp.
func index(ctx context.Context, bi bleve.Index, r *bufio.Reader, cp *checkpoint, cfg BuildConfig, progress func()) error {
	batch := bi.NewBatch()
	pending, pendingBytes, pendingSkipped := int64(0), int64(0), int64(0)
	commit := func() error {
		if err := bi.Batch(batch); err != nil {
			return fmt.Errorf("index batch: %w", err)
		}
		batch.Reset()
		cp.Docs += pending
		cp.Offset += pendingBytes
		cp.Skipped += pendingSkipped
		pending, pendingBytes, pendingSkipped = 0, 0, 0
		if err := writeCheckpoint(cfg.Out, *cp); err != nil {
			return err
		}
		progress()
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 {
			pendingBytes += int64(len(line))
			if trimmed := trimSpace(line); len(trimmed) > 0 {
				d, err := ParseLine(trimmed)
				if err != nil {
					pendingSkipped++
				} else {
					if err := batch.Index(d.ID, d); err != nil {
						return fmt.Errorf("index document %s: %w", d.ID, err)
					}
					pending++
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read corpus: %w", rerr)
		}
		if pending >= int64(cfg.BatchSize) {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	cp.Done = true
	return commit()
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func readCheckpoint(dir string) (checkpoint, error) {
	var cp checkpoint
	b, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		return cp, err
	}
	err = json.Unmarshal(b, &cp)
	return cp, err
}

// writeCheckpoint replaces the checkpoint atomically (write, then rename).
func writeCheckpoint(dir string, cp checkpoint) error {
	b, _ := json.Marshal(cp)
	tmp := filepath.Join(dir, checkpointFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, checkpointFile)); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}
