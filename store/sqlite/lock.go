package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// LockRun takes or renews run's lock for o in one statement: the row is
// written when absent, when o holds it, or when its lease has passed (by
// this machine's clock: every process of a SQLite store runs on it).
func (s *Store) LockRun(ctx context.Context, run string, o store.Owner, lease time.Duration) (store.Owner, error) {
	op := fmt.Sprintf("lock run %q", run)
	if err := s.alive(); err != nil {
		return o, s.errf(op, err)
	}
	if lease <= 0 {
		return o, s.errf(op, fmt.Errorf("lease %v ≤ 0", lease))
	}
	now := time.Now()
	exp := now.Add(lease)
	res, err := s.w.ExecContext(ctx, `INSERT INTO run_locks (run, token, host, pid, started, expires_ms) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (run) DO UPDATE SET token = excluded.token, host = excluded.host, pid = excluded.pid,
			started = excluded.started, expires_ms = excluded.expires_ms
		WHERE run_locks.token = excluded.token OR run_locks.expires_ms <= ?`,
		run, o.Token, o.Host, o.PID, o.Started.UTC().Format(time.RFC3339Nano), exp.UnixMilli(), now.UnixMilli())
	if err != nil {
		return o, s.errf(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return o, s.errf(op, err)
	}
	if n == 1 {
		o.Expires = exp
		return o, nil
	}
	var (
		held    store.Owner
		started string
		expMs   int64
	)
	err = s.w.QueryRowContext(ctx, `SELECT token, host, pid, started, expires_ms FROM run_locks WHERE run = ?`, run).
		Scan(&held.Token, &held.Host, &held.PID, &started, &expMs)
	if errors.Is(err, sql.ErrNoRows) {
		// Released between the two statements: take it again.
		return s.LockRun(ctx, run, o, lease)
	}
	if err != nil {
		return o, s.errf(op, err)
	}
	if held.Started, err = time.Parse(time.RFC3339Nano, started); err != nil {
		return o, s.errf(op, corruptf("lock's start time %q", started))
	}
	held.Expires = time.UnixMilli(expMs)
	return o, s.errf(op, &store.LockedError{Run: run, Owner: held})
}

// UnlockRun deletes run's lock when o holds it.
func (s *Store) UnlockRun(ctx context.Context, run string, o store.Owner) error {
	op := fmt.Sprintf("unlock run %q", run)
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM run_locks WHERE run = ? AND token = ?`, run, o.Token); err != nil {
		return s.errf(op, err)
	}
	return nil
}
