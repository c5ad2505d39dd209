package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/store"
	sqlite3 "modernc.org/sqlite/lib"
)

// applicationID marks an mgrpo store in the database header (PRAGMA
// application_id): "mgrp".
const applicationID = 0x6d677270

// migration is one numbered step of the schema. Its SQL runs in one
// transaction with the version that records it, so a store is always at
// exactly one version.
type migration struct {
	version int
	sql     string
}

// migrations are the schema's history, in order, numbered from 1. A
// released migration is never edited: a change of schema is a new one.
var migrations = []migration{
	{1, `
CREATE TABLE runs (
	id      TEXT PRIMARY KEY,
	version INTEGER NOT NULL,
	config  TEXT NOT NULL,
	created TEXT NOT NULL
) STRICT;

CREATE TABLE steps (
	run      TEXT NOT NULL REFERENCES runs (id),
	step     INTEGER NOT NULL,
	status   TEXT NOT NULL,
	rollouts INTEGER NOT NULL,
	dbar     INTEGER NOT NULL,
	files    TEXT NOT NULL,
	summary  TEXT,
	PRIMARY KEY (run, step)
) STRICT;

CREATE TABLE stat_sets (
	run  TEXT NOT NULL,
	step INTEGER NOT NULL,
	n    INTEGER NOT NULL,
	PRIMARY KEY (run, step)
) STRICT;

CREATE TABLE query_stats (
	run       TEXT NOT NULL,
	step      INTEGER NOT NULL,
	idx       INTEGER NOT NULL,
	query_id  TEXT NOT NULL,
	main_n    INTEGER NOT NULL,
	main      BLOB,
	main_mean REAL,
	main_std  REAL,
	d_n       INTEGER NOT NULL,
	d         BLOB,
	dbar      INTEGER NOT NULL,
	sub_n     INTEGER NOT NULL,
	sub       BLOB,
	sub_mean  REAL,
	sub_std   REAL,
	PRIMARY KEY (run, step, idx),
	FOREIGN KEY (run, step) REFERENCES stat_sets (run, step) ON DELETE CASCADE
) STRICT;

CREATE TABLE tasks (
	seq            INTEGER PRIMARY KEY AUTOINCREMENT,
	run            TEXT NOT NULL,
	task_id        TEXT NOT NULL,
	task_run       TEXT NOT NULL,
	step           INTEGER NOT NULL,
	query_id       TEXT NOT NULL,
	k              INTEGER NOT NULL,
	seed           INTEGER NOT NULL,
	policy_version INTEGER NOT NULL,
	state          TEXT NOT NULL CHECK (state IN ('pending', 'leased', 'done', 'dead')),
	attempts       INTEGER NOT NULL,
	worker         TEXT NOT NULL,
	expires_ms     INTEGER NOT NULL,
	UNIQUE (run, task_id)
) STRICT;
CREATE INDEX tasks_by_state ON tasks (run, state, seq);
CREATE INDEX tasks_by_expiry ON tasks (run, state, expires_ms);

CREATE TABLE dead_letters (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	run         TEXT NOT NULL,
	task_seq    INTEGER NOT NULL REFERENCES tasks (seq),
	attempts    INTEGER NOT NULL,
	last_worker TEXT NOT NULL
) STRICT;
CREATE INDEX dead_letters_by_run ON dead_letters (run, seq);
CREATE INDEX dead_letters_by_task ON dead_letters (task_seq);

CREATE TABLE results (
	run     TEXT NOT NULL,
	step    INTEGER NOT NULL,
	task_id TEXT NOT NULL,
	result  BLOB NOT NULL,
	PRIMARY KEY (run, step, task_id)
) STRICT;

CREATE TABLE cache (
	key        TEXT PRIMARY KEY,
	value      BLOB NOT NULL,
	expires_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX cache_by_expiry ON cache (expires_ms);

CREATE TABLE policy_versions (
	run     TEXT NOT NULL,
	role    TEXT NOT NULL,
	version INTEGER NOT NULL,
	PRIMARY KEY (run, role)
) STRICT;
`},
	// 2: a step's observed d_k (JSON array), for a resumed run's auto d̄.
	{2, `ALTER TABLE steps ADD COLUMN observed_d TEXT;`},
	// 3: files of a step handed to another machine (PutStepFile).
	{3, `CREATE TABLE step_files (
	run  TEXT NOT NULL,
	step INTEGER NOT NULL,
	name TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (run, step, name)
) STRICT;`},
	// 4: the executors' policy version of a queued task.
	{4, `ALTER TABLE tasks ADD COLUMN executor_policy_version INTEGER NOT NULL DEFAULT 0;`},
	// 5: the draws of streamed runs and their results, under keys of
	// their own (stores of version 4 kept them under negative steps).
	{5, `CREATE TABLE draws (
	run    TEXT NOT NULL,
	n      INTEGER NOT NULL,
	record BLOB NOT NULL,
	PRIMARY KEY (run, n)
) STRICT;

CREATE TABLE draw_results (
	run     TEXT NOT NULL,
	draw    INTEGER NOT NULL,
	task_id TEXT NOT NULL,
	result  BLOB NOT NULL,
	PRIMARY KEY (run, draw, task_id)
) STRICT;`},
	// 6: the lock of each run's coordinator (store.Locks).
	{6, `CREATE TABLE run_locks (
	run        TEXT PRIMARY KEY,
	token      TEXT NOT NULL,
	host       TEXT NOT NULL,
	pid        INTEGER NOT NULL,
	started    TEXT NOT NULL,
	expires_ms INTEGER NOT NULL
) STRICT;`},
	// 7: results in append-only files, one per run and step (or draw),
	// of which the database keeps the committed length (resultfile.go);
	// the tables keep what stores of version 6 wrote.
	{7, `CREATE TABLE result_files (
	id   INTEGER PRIMARY KEY AUTOINCREMENT,
	run  TEXT NOT NULL,
	kind TEXT NOT NULL,
	key  INTEGER NOT NULL,
	size INTEGER NOT NULL,
	UNIQUE (run, kind, key)
) STRICT;`},
}

// SchemaVersion is the schema version this binary writes: the number of
// its last migration.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// header is what the database header says about the file.
type header struct {
	appID, version int
	objects        int // schema objects (tables, indexes, …)
}

// queryer is what readHeader needs of a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readHeader(ctx context.Context, q queryer) (header, error) {
	var h header
	// One statement, so the three values come from one snapshot: read apart,
	// another process's migration could commit in between (its tables seen
	// without its version).
	err := q.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema)`).Scan(&h.appID, &h.version, &h.objects)
	return h, err
}

// check refuses a database this binary must not write to: another
// application's, one that says it is a store but has no version, and one
// of a newer version.
func (h header) check() error {
	switch {
	case h.appID != applicationID && h.appID != 0:
		return fmt.Errorf("not an mgrpo store (application id %#x): %w", h.appID, store.ErrCorrupt)
	case h.appID == 0 && (h.version != 0 || h.objects != 0):
		return fmt.Errorf("not an mgrpo store (a SQLite database of %d schema objects, user_version %d, no mgrpo application id): %w",
			h.objects, h.version, store.ErrCorrupt)
	case h.version > SchemaVersion():
		return fmt.Errorf("schema version %d, this binary reads up to version %d (upgrade mgrpo to open it): %w",
			h.version, SchemaVersion(), ErrNewerSchema)
	case h.appID == applicationID && h.version == 0:
		return fmt.Errorf("an mgrpo store without a schema version: %w", store.ErrCorrupt)
	}
	return nil
}

// migrate brings the file to SchemaVersion. Several processes may open a
// new file at once: each migration re-reads the version inside its
// IMMEDIATE transaction, so it is applied once.
func (s *Store) migrate(ctx context.Context) error {
	h, err := readHeader(ctx, s.w)
	if err != nil {
		return s.errf("read the schema version", err)
	}
	// Checked before the journal mode changes: that writes to the file.
	if err := h.check(); err != nil {
		return s.errf("open", err)
	}
	mode, err := s.setWAL(ctx)
	if err != nil {
		return s.errf("set WAL journal mode", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return s.errf("set WAL journal mode", fmt.Errorf("journal mode is %q", mode))
	}
	for _, m := range migrations {
		if m.version <= h.version {
			continue
		}
		if err := s.apply(ctx, m); err != nil {
			return err
		}
	}
	return s.verifySchema(ctx)
}

// setWAL switches the file to WAL mode. Switching takes an exclusive
// lock, and SQLite answers SQLITE_BUSY at once, without its busy handler,
// while another process opening the same new file holds a lock: the switch
// is retried until the busy timeout.
func (s *Store) setWAL(ctx context.Context) (string, error) {
	deadline := time.Now().Add(s.cfg.busyTimeout)
	for {
		var mode string
		err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return mode, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY.
func isBusy(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_BUSY
}

// apply runs migration m unless another process did first.
func (s *Store) apply(ctx context.Context, m migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(fmt.Sprintf("migrate to version %d", m.version), err)
	}
	defer tx.Rollback()
	h, err := readHeader(ctx, tx)
	if err != nil {
		return s.errf(fmt.Sprintf("migrate to version %d", m.version), err)
	}
	if err := h.check(); err != nil {
		return s.errf("open", err)
	}
	if h.version >= m.version {
		return nil
	}
	if h.version != m.version-1 {
		return s.errf("open", fmt.Errorf("schema version %d, migration %d needs %d", h.version, m.version, m.version-1))
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return s.errf(fmt.Sprintf("migrate to version %d", m.version), err)
	}
	// PRAGMA takes no parameters; both values are this code's integers.
	set := fmt.Sprintf(`PRAGMA application_id = %d; PRAGMA user_version = %d`, applicationID, m.version)
	if _, err := tx.ExecContext(ctx, set); err != nil {
		return s.errf(fmt.Sprintf("migrate to version %d", m.version), err)
	}
	if err := tx.Commit(); err != nil {
		return s.errf(fmt.Sprintf("migrate to version %d", m.version), err)
	}
	return nil
}

// schemaObject is a table, index or trigger as sqlite_schema records it.
type schemaObject struct{ kind, name, sql string }

// verifySchema compares the file's schema with the one the migrations
// build in an empty in-memory database: every object must be there with
// the same definition (others, such as an index an operator added, are
// allowed). A store whose schema differs cannot be read safely.
func (s *Store) verifySchema(ctx context.Context) error {
	want, err := referenceSchema(ctx)
	if err != nil {
		return s.errf("build the reference schema", err)
	}
	got, err := schemaObjects(ctx, s.w)
	if err != nil {
		return s.errf("read the schema", err)
	}
	// Tables first, then by name, so the error names the root cause.
	names := slices.SortedFunc(maps.Keys(want), func(a, b string) int {
		return cmp.Or(cmp.Compare(kindOrder(want[a].kind), kindOrder(want[b].kind)), cmp.Compare(a, b))
	})
	for _, name := range names {
		w := want[name]
		g, ok := got[name]
		switch {
		case !ok:
			return s.errf("open", fmt.Errorf("schema version %d lacks %s %s: %w", SchemaVersion(), w.kind, name, store.ErrCorrupt))
		case g != w:
			return s.errf("open", fmt.Errorf("schema version %d: %s %s differs from this binary's: %w", SchemaVersion(), w.kind, name, store.ErrCorrupt))
		}
	}
	return nil
}

func kindOrder(kind string) int {
	if kind == "table" {
		return 0
	}
	return 1
}

// referenceSchema applies every migration to an in-memory database.
func referenceSchema(ctx context.Context) (map[string]schemaObject, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// One connection: each one of ":memory:" is a database of its own.
	db.SetMaxOpenConns(1)
	for _, m := range migrations {
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			return nil, fmt.Errorf("migration %d: %w", m.version, err)
		}
	}
	return schemaObjects(ctx, db)
}

func schemaObjects(ctx context.Context, db *sql.DB) (map[string]schemaObject, error) {
	rows, err := db.QueryContext(ctx, `SELECT type, name, coalesce(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]schemaObject{}
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.kind, &o.name, &o.sql); err != nil {
			return nil, err
		}
		out[o.name] = o
	}
	return out, rows.Err()
}
