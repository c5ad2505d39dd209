package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	"github.com/mgrpo/mgrpo/store"
)

// compactConfig returns a run configuration in the form it is stored and
// compared in: compact JSON, "null" when empty.
func compactConfig(cfg json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(cfg)) == 0 {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, cfg); err != nil {
		return nil, fmt.Errorf("config is not JSON: %w", err)
	}
	return b.Bytes(), nil
}

// CreateRun stores r, or checks it against the stored run of that id: the
// same Version and Config (compared as compact JSON) return nil and keep
// the stored Created, others return an error wrapping store.ErrConflict.
func (s *Store) CreateRun(ctx context.Context, r store.RunRecord) error {
	op := fmt.Sprintf("create run %q", r.ID)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	cfg, err := compactConfig(r.Config)
	if err != nil {
		return s.errf(op, err)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO runs (id, version, config, created) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		r.ID, r.Version, string(cfg), r.Created.Format(time.RFC3339Nano))
	if err != nil {
		return s.errf(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.errf(op, err)
	}
	if n == 1 {
		return nil
	}
	// Runs are never changed once created, so reading outside the insert's
	// transaction sees what the insert met.
	old, err := s.Run(ctx, r.ID)
	if err != nil {
		return err
	}
	if old.Version != r.Version {
		return s.errf(op, fmt.Errorf("stored with version %d, given %d: %w", old.Version, r.Version, store.ErrConflict))
	}
	if !bytes.Equal(old.Config, cfg) {
		return s.errf(op, fmt.Errorf("stored with another configuration: %w", store.ErrConflict))
	}
	return nil
}

// Run returns the run called id.
func (s *Store) Run(ctx context.Context, id string) (store.RunRecord, error) {
	op := fmt.Sprintf("read run %q", id)
	if err := s.alive(); err != nil {
		return store.RunRecord{}, s.errf(op, err)
	}
	var (
		r       = store.RunRecord{ID: id}
		cfg     string
		created string
	)
	err := s.r.QueryRowContext(ctx, `SELECT version, config, created FROM runs WHERE id = ?`, id).Scan(&r.Version, &cfg, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return r, s.errf(op, store.ErrNotFound)
	}
	if err != nil {
		return r, s.errf(op, err)
	}
	if !json.Valid([]byte(cfg)) {
		return r, s.errf(op, corruptf("stored config is not JSON"))
	}
	r.Config = json.RawMessage(cfg)
	if r.Created, err = time.Parse(time.RFC3339Nano, created); err != nil {
		return r, s.errf(op, corruptf("stored creation time %q", created))
	}
	return r, nil
}

// PutStep stores st as step st.Step of run, replacing an earlier record of
// that step; the run must exist.
func (s *Store) PutStep(ctx context.Context, run string, st store.StepRecord) error {
	op := fmt.Sprintf("put step %d of run %q", st.Step, run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	var summary sql.NullString
	if st.Summary != nil {
		b, err := json.Marshal(st.Summary)
		if err != nil {
			return s.errf(op, err)
		}
		summary = sql.NullString{String: string(b), Valid: true}
	}
	var observed sql.NullString
	if st.ObservedD != nil {
		b, err := json.Marshal(st.ObservedD)
		if err != nil {
			return s.errf(op, err)
		}
		observed = sql.NullString{String: string(b), Valid: true}
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO steps (run, step, status, rollouts, dbar, files, summary, observed_d) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run, step) DO UPDATE SET status = excluded.status, rollouts = excluded.rollouts, dbar = excluded.dbar,
			files = excluded.files, summary = excluded.summary, observed_d = excluded.observed_d`,
		run, st.Step, string(st.Status), st.Rollouts, st.DBar, st.Files, summary, observed)
	if isForeignKey(err) {
		return s.errf(op, fmt.Errorf("no run %q: %w", run, store.ErrNotFound))
	}
	if err != nil {
		return s.errf(op, err)
	}
	return nil
}

// Steps returns run's step records in step order.
func (s *Store) Steps(ctx context.Context, run string) ([]store.StepRecord, error) {
	op := fmt.Sprintf("read the steps of run %q", run)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT step, status, rollouts, dbar, files, summary, observed_d FROM steps WHERE run = ? ORDER BY step`, run)
	if err != nil {
		return nil, s.errf(op, err)
	}
	defer rows.Close()
	out := []store.StepRecord{}
	for rows.Next() {
		var (
			st       store.StepRecord
			status   string
			summary  sql.NullString
			observed sql.NullString
		)
		if err := rows.Scan(&st.Step, &status, &st.Rollouts, &st.DBar, &st.Files, &summary, &observed); err != nil {
			return nil, s.errf(op, err)
		}
		st.Status = store.StepStatus(status)
		if summary.Valid {
			st.Summary = new(rollout.StepSummary)
			if err := json.Unmarshal([]byte(summary.String), st.Summary); err != nil {
				return nil, s.errf(op, corruptf("summary of step %d: %v", st.Step, err))
			}
		}
		if observed.Valid {
			if err := json.Unmarshal([]byte(observed.String), &st.ObservedD); err != nil {
				return nil, s.errf(op, corruptf("observed d of step %d: %v", st.Step, err))
			}
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errf(op, err)
	}
	return out, nil
}

// SetPolicyVersion records v as role's current version unless a higher one
// is stored.
func (s *Store) SetPolicyVersion(ctx context.Context, run, role string, v int64) error {
	op := fmt.Sprintf("set the %s policy version of run %q", role, run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO policy_versions (run, role, version) VALUES (?, ?, ?)
		ON CONFLICT (run, role) DO UPDATE SET version = max(version, excluded.version)`, run, role, v)
	if err != nil {
		return s.errf(op, err)
	}
	return nil
}

// PolicyVersion returns role's current version, 0 when none was set.
func (s *Store) PolicyVersion(ctx context.Context, run, role string) (int64, error) {
	op := fmt.Sprintf("read the %s policy version of run %q", role, run)
	if err := s.alive(); err != nil {
		return 0, s.errf(op, err)
	}
	var v int64
	err := s.r.QueryRowContext(ctx, `SELECT version FROM policy_versions WHERE run = ? AND role = ?`, run, role).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, s.errf(op, err)
	}
	return v, nil
}

// RunIDs returns the stored runs' ids, sorted.
func (s *Store) RunIDs(ctx context.Context) ([]string, error) {
	op := "list the runs"
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM runs ORDER BY id`)
	if err != nil {
		return nil, s.errf(op, err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.errf(op, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errf(op, err)
	}
	return ids, nil
}

// PutStepFile stores data as the file name of step.
func (s *Store) PutStepFile(ctx context.Context, run string, step int, name string, data []byte) error {
	op := fmt.Sprintf("put file %s of step %d of run %q", name, step, run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	if data == nil {
		data = []byte{}
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO step_files (run, step, name, data) VALUES (?, ?, ?, ?)
		ON CONFLICT (run, step, name) DO UPDATE SET data = excluded.data`, run, step, name, data)
	if err != nil {
		return s.errf(op, err)
	}
	return nil
}

// StepFile returns the file name of step.
func (s *Store) StepFile(ctx context.Context, run string, step int, name string) ([]byte, error) {
	op := fmt.Sprintf("read file %s of step %d of run %q", name, step, run)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	var data []byte
	err := s.r.QueryRowContext(ctx, `SELECT data FROM step_files WHERE run = ? AND step = ? AND name = ?`, run, step, name).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.errf(op, errNotFoundf("no such file"))
	}
	if err != nil {
		return nil, s.errf(op, err)
	}
	return data, nil
}
