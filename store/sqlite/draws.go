package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// PutDraw stores the record of draw n, replacing one stored before.
func (s *Store) PutDraw(ctx context.Context, run string, n int, record []byte) error {
	op := fmt.Sprintf("put the record of draw %d of run %q", n, run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	if record == nil {
		record = []byte{}
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO draws (run, n, record) VALUES (?, ?, ?)
		ON CONFLICT (run, n) DO UPDATE SET record = excluded.record`, run, n, record)
	if err != nil {
		return s.errf(op, err)
	}
	return nil
}

// Draw returns the record of draw n.
func (s *Store) Draw(ctx context.Context, run string, n int) ([]byte, error) {
	op := fmt.Sprintf("read the record of draw %d of run %q", n, run)
	if err := s.alive(); err != nil {
		return nil, s.errf(op, err)
	}
	var rec []byte
	err := s.r.QueryRowContext(ctx, `SELECT record FROM draws WHERE run = ? AND n = ?`, run, n).Scan(&rec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.errf(op, errNotFoundf("no such draw"))
	}
	if err != nil {
		return nil, s.errf(op, err)
	}
	return rec, nil
}

// PutDrawResult stores the result of task taskID of draw n unless one is
// stored already (the first result is kept).
func (s *Store) PutDrawResult(ctx context.Context, run string, n int, taskID string, result json.RawMessage) error {
	return s.putResult(ctx, drawResults, run, n, taskID, result)
}

// DrawResult returns the result of task taskID of draw n.
func (s *Store) DrawResult(ctx context.Context, run string, n int, taskID string) (json.RawMessage, error) {
	return s.result(ctx, drawResults, run, n, taskID)
}

// ScanDrawResults calls fn with every result of draw n, stopping at fn's
// first error (in the order ScanResults gives a step's).
func (s *Store) ScanDrawResults(ctx context.Context, run string, n int, fn func(taskID string, result json.RawMessage) error) error {
	return s.scanResults(ctx, drawResults, run, n, fn)
}

// DeleteDrawResults removes draw n's results.
func (s *Store) DeleteDrawResults(ctx context.Context, run string, n int) error {
	return s.deleteResults(ctx, drawResults, run, n)
}
