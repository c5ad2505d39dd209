// Package files is the trainer backend that trains nothing: it writes each
// step's batch of one role to a directory in the hand-off format of
// docs/trainer-files.md (each distinct token sequence once, plus an index
// that expands to the full batch, plus a manifest), for a trainer that
// reads them offline. Its URLs are file://DIR.
package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/mgrpo/mgrpo/rollout"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
)

func init() {
	trainerbridge.Register("file", func(_ context.Context, u *url.URL, o trainerbridge.Options) (trainerbridge.Trainer, error) {
		dir, err := DirFromURL(u)
		if err != nil {
			return nil, err
		}
		return New(dir, o), nil
	})
}

// DirFromURL returns the directory a file URL names: file:///abs/dir,
// file://rel/dir (relative to the working directory) or file:rel/dir.
func DirFromURL(u *url.URL) (string, error) {
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("file trainer URL takes no query or fragment")
	}
	dir := u.Opaque
	if dir == "" {
		dir = u.Host + u.Path
	}
	if dir == "" {
		return "", fmt.Errorf("file trainer URL names no directory")
	}
	return filepath.Clean(dir), nil
}

// Trainer writes batches under its directory: Dir/ROLE/step-NNNNNN/.
type Trainer struct {
	dir  string
	opts trainerbridge.Options
	once sync.Once
}

var _ trainerbridge.Trainer = (*Trainer)(nil)

// New returns the files Trainer writing under dir.
func New(dir string, o trainerbridge.Options) *Trainer { return &Trainer{dir: dir, opts: o} }

// StepDir returns the directory of a role's step under root.
func StepDir(root string, role rollout.Role, step int) string {
	return filepath.Join(root, string(role), fmt.Sprintf("step-%06d", step))
}

// Start creates the directory. The files backend serves any base model.
func (t *Trainer) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return fmt.Errorf("start file trainer: %w", err)
	}
	return nil
}

// Train writes b to its step directory and returns a result naming no
// weights, with Version b.PolicyVersion: nothing is trained. A batch whose
// step directory exists already is not written again: its result is
// returned when the files hold the same samples, and an error wrapping
// trainerbridge.ErrRejected when they hold others.
func (t *Trainer) Train(ctx context.Context, b trainerbridge.Batch) (trainerbridge.StepResult, error) {
	if t.opts.Role != "" && b.Role != t.opts.Role {
		return trainerbridge.StepResult{}, fmt.Errorf("write step %s: %w: a batch of role %s for the %s trainer", b.IdempotencyKey(), trainerbridge.ErrRejected, b.Role, t.opts.Role)
	}
	if err := checkBatch(b); err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("write step %s: %w: %v", b.IdempotencyKey(), trainerbridge.ErrRejected, err)
	}
	final := StepDir(t.dir, b.Role, b.Step)
	if m, err := ReadManifest(final); err == nil {
		return t.existing(b, final, m)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return trainerbridge.StepResult{}, fmt.Errorf("write step %s: %w", b.IdempotencyKey(), err)
	}
	m, err := writeStep(ctx, final, b, t.opts.WireTemperature())
	if errors.Is(err, fs.ErrExist) {
		// Another writer finished the same step first.
		if m, rerr := ReadManifest(final); rerr == nil {
			return t.existing(b, final, m)
		}
	}
	if err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("write step %s: %w", b.IdempotencyKey(), err)
	}
	return result(m), nil
}

// existing returns the result of a step already on disk, after checking
// that b is the batch written there.
func (t *Trainer) existing(b trainerbridge.Batch, dir string, on Manifest) (trainerbridge.StepResult, error) {
	m, err := Encode(b, io.Discard, io.Discard)
	if err != nil {
		return trainerbridge.StepResult{}, fmt.Errorf("write step %s: %w", b.IdempotencyKey(), err)
	}
	m.Temperature = t.opts.WireTemperature()
	if !sameManifest(m, on) {
		return trainerbridge.StepResult{}, fmt.Errorf("write step %s: %w: %s already holds other samples of this step (remove it to write the step again)", b.IdempotencyKey(), trainerbridge.ErrRejected, dir)
	}
	return result(on), nil
}

func sameManifest(a, b Manifest) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// result is the StepResult of a written step.
func result(m Manifest) trainerbridge.StepResult {
	return trainerbridge.StepResult{Version: m.PolicyVersion, Metrics: map[string]float64{
		"samples":   float64(m.Samples),
		"sequences": float64(m.Sequences),
		"bytes":     float64(m.Bytes()),
	}}
}

// Close does nothing; it may be called any number of times.
func (t *Trainer) Close() error { return nil }

// writeStep writes b into a hidden temporary directory beside final, each
// file synced, the manifest last, and renames the directory to final, so
// final only ever holds a complete step. It returns an error wrapping
// fs.ErrExist when final appeared meanwhile.
func writeStep(ctx context.Context, final string, b trainerbridge.Batch, temperature float64) (m Manifest, err error) {
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return m, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(final)+".tmp-")
	if err != nil {
		return m, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	seqF, err := os.Create(filepath.Join(tmp, SequencesFile))
	if err != nil {
		return m, err
	}
	defer seqF.Close()
	idxF, err := os.Create(filepath.Join(tmp, IndexFile))
	if err != nil {
		return m, err
	}
	defer idxF.Close()
	if m, err = Encode(b, seqF, idxF); err != nil {
		return m, err
	}
	m.Temperature = temperature
	if err := ctx.Err(); err != nil {
		return m, err
	}
	for _, f := range []*os.File{seqF, idxF} {
		if err := f.Sync(); err != nil {
			return m, err
		}
		if err := f.Close(); err != nil {
			return m, err
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, err
	}
	if err := writeSynced(filepath.Join(tmp, ManifestFile), append(data, '\n')); err != nil {
		return m, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return m, err
	}
	if err := syncDir(tmp); err != nil {
		return m, err
	}
	if _, err := os.Lstat(final); err == nil {
		return m, fmt.Errorf("%s: %w", final, fs.ErrExist)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Lstat(final); serr == nil {
			return m, fmt.Errorf("%s: %w", final, fs.ErrExist)
		}
		return m, err
	}
	return m, syncDir(parent)
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
