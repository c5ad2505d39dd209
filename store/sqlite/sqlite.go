package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mgrpo/mgrpo/store"
)

var _ store.Store = (*Store)(nil)

// The defaults of Open's options.
const (
	// DefaultBusyTimeout is how long a statement waits for another
	// connection's write lock before it fails with SQLITE_BUSY.
	DefaultBusyTimeout = 10 * time.Second
	// DefaultPollInterval is how often a waiting Claim looks at the queue
	// again for tasks it was not told about (enqueued by another process,
	// or leases that expired).
	DefaultPollInterval = 25 * time.Millisecond
	// DefaultCacheSweepInterval is how often expired cache entries are
	// deleted.
	DefaultCacheSweepInterval = 10 * time.Minute
	// readConns is the most connections a Store reads through at once.
	readConns = 4
	// walCheckpointPages is the WAL's length, in pages, at which a
	// commit checkpoints it (see dsn).
	walCheckpointPages = 16384
)

// ErrNewerSchema is returned (wrapped) by Open for a database whose schema
// was written by a newer version of mgrpo than this binary.
var ErrNewerSchema = errors.New("store written by a newer version of mgrpo")

// errClosed is returned by the methods of a closed Store.
var errClosed = store.ErrClosed

// Option configures Open.
type Option func(*config)

type config struct {
	busyTimeout   time.Duration
	pollInterval  time.Duration
	sweepInterval time.Duration
}

// WithBusyTimeout sets how long a statement waits for the write lock held
// by another connection or process (DefaultBusyTimeout; at least 1 ms).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = d }
}

// WithPollInterval sets how often a waiting Claim looks at the queue again
// (DefaultPollInterval).
func WithPollInterval(d time.Duration) Option {
	return func(c *config) { c.pollInterval = d }
}

// WithCacheSweepInterval sets how often expired cache entries are deleted
// (DefaultCacheSweepInterval; ≤ 0: never, expired entries are then only
// misses).
func WithCacheSweepInterval(d time.Duration) Option {
	return func(c *config) { c.sweepInterval = d }
}

// Store is a store.Store in one SQLite file. It is safe for concurrent use,
// and several Stores, in one process or several, may share a file.
type Store struct {
	path string
	cfg  config
	// w is the one connection every write goes through, so that the
	// process's own writers queue in database/sql instead of spinning on
	// SQLite's lock; r serves reads, which WAL lets run beside a write.
	w, r *sql.DB

	// wake is closed (and replaced) when this Store enqueues tasks, so
	// that its waiting claimers look at once instead of at the next poll.
	mu   sync.Mutex
	wake chan struct{}

	// life ends with Close: the sweeper and waiting claimers stop.
	life      context.Context
	end       context.CancelFunc
	closeOnce sync.Once
	closeErr  error
	sweeper   sync.WaitGroup

	// files indexes the result files this Store read (resultfile.go).
	files fileIndexes
}

// Open opens the store in the SQLite file at path, creating the file (and
// its directory) when absent and bringing its schema to this binary's
// version. It fails with an error wrapping store.ErrCorrupt for a file that
// is not an mgrpo store or cannot be read, which it leaves as it found it,
// and with one wrapping ErrNewerSchema for a store of a newer version.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{busyTimeout: DefaultBusyTimeout, pollInterval: DefaultPollInterval, sweepInterval: DefaultCacheSweepInterval}
	for _, o := range opts {
		o(&cfg)
	}
	if err := checkConfig(path, cfg); err != nil {
		return nil, wrapErr(path, "open", err)
	}
	if err := precheckFile(path); err != nil {
		return nil, wrapErr(path, "open", err)
	}
	s := &Store{path: path, cfg: cfg, wake: make(chan struct{})}
	s.life, s.end = context.WithCancel(context.Background())
	if err := s.open(ctx); err != nil {
		s.end()
		s.closePools()
		return nil, err
	}
	if err := s.sweepResultFiles(ctx); err != nil {
		s.end()
		s.closePools()
		return nil, s.errf("open: remove result files of deleted steps", err)
	}
	if cfg.sweepInterval > 0 {
		s.sweeper.Add(1)
		go s.sweep()
	}
	return s, nil
}

func checkConfig(path string, cfg config) error {
	switch {
	case path == "":
		return errors.New("no file named")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return errors.New("want the path of a file (an in-memory database or a URI filename cannot be shared)")
	case strings.ContainsRune(path, '?'):
		return errors.New("a path with '?' is not supported")
	case cfg.busyTimeout < time.Millisecond:
		return fmt.Errorf("busy timeout %v < 1ms", cfg.busyTimeout)
	case cfg.pollInterval <= 0:
		return fmt.Errorf("poll interval %v ≤ 0", cfg.pollInterval)
	}
	return nil
}

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// precheckFile refuses, before SQLite touches it, a file that is not a
// SQLite database: opening one would not harm it, but a journal mode
// change or a migration must never be tried on it. A missing file gets its
// directory created.
func precheckFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.IsDir() {
		return errors.New("is a directory")
	}
	if info.Size() == 0 {
		// SQLite's own empty database: a file created and not yet written.
		return nil
	}
	// A database file holds at least its 100-byte header.
	head := make([]byte, 100)
	if n, err := f.ReadAt(head, 0); n < len(head) {
		return fmt.Errorf("not a SQLite database (%d bytes, %v): %w", info.Size(), err, store.ErrCorrupt)
	}
	if string(head[:len(sqliteHeader)]) != sqliteHeader {
		return fmt.Errorf("not a SQLite database (no SQLite header): %w", store.ErrCorrupt)
	}
	return nil
}

// dsn returns the driver's data source name for path. Every connection
// waits busyTimeout for a lock and enforces foreign keys; in WAL mode
// synchronous=NORMAL syncs at checkpoints instead of at every commit, which
// keeps the file consistent after a crash but may lose the last commits on
// a power failure (a lost completion only runs a rollout again). The writer
// begins its transactions IMMEDIATE: it takes the write lock up front, so
// a transaction that reads and then writes never fails halfway for a lock
// another process took in between.
func (s *Store) dsn(writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(s.cfg.busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if writer {
		// A checkpoint copies the WAL's pages into the file; results are
		// deleted once their step is written and their pages reused, so a
		// longer WAL (64 MiB at 4 KiB pages, not the default 4 MiB)
		// copies each page once for several steps' writes of it, not once
		// each (≈8% of the farm's CPU on the zero-latency benchmark).
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(walCheckpointPages)+")")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return s.path + "?" + q.Encode()
}

// open opens the writer, checks and migrates the schema, then opens the
// readers.
func (s *Store) open(ctx context.Context) error {
	var err error
	if s.w, err = sql.Open("sqlite", s.dsn(true)); err != nil {
		return s.errf("open", err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxIdleTime(0)
	s.w.SetConnMaxLifetime(0)
	if err := s.migrate(ctx); err != nil {
		return err
	}
	if s.r, err = sql.Open("sqlite", s.dsn(false)); err != nil {
		return s.errf("open", err)
	}
	s.r.SetMaxOpenConns(readConns)
	s.r.SetMaxIdleConns(readConns)
	return nil
}

// Path returns the file the store is in, as Open was given it.
func (s *Store) Path() string { return s.path }

// Close stops the cache sweeper and closes the store's connections. It is
// idempotent; the other methods fail after it.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.end()
		s.sweeper.Wait()
		s.closeErr = s.closePools()
	})
	return s.closeErr
}

func (s *Store) closePools() error {
	var errs []error
	// The readers first: the last connection to close checkpoints the WAL.
	for _, db := range []*sql.DB{s.r, s.w} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return s.errf("close", err)
	}
	return nil
}

// alive fails once the store is closed, so that methods say so instead of
// database/sql's "database is closed".
func (s *Store) alive() error {
	if s.life.Err() != nil {
		return errClosed
	}
	return nil
}

// errf wraps err with the file and the operation, adding store.ErrCorrupt
// to SQLite's "database disk image is malformed" and "file is not a
// database".
func (s *Store) errf(op string, err error) error { return wrapErr(s.path, op, err) }

func wrapErr(path, op string, err error) error {
	if isCorrupt(err) && !errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("sqlite %s: %s: %w: %w", path, op, store.ErrCorrupt, err)
	}
	if class := errClass(err); class != nil && !errors.Is(err, class) {
		return fmt.Errorf("sqlite %s: %s: %w: %w", path, op, class, err)
	}
	return fmt.Errorf("sqlite %s: %s: %w", path, op, err)
}

// errClass returns the store's class of a SQLite error (see
// store.Transient): store.ErrUnusable for a full disk, a read-only,
// corrupt or unopenable database or a failed disk, store.ErrUnavailable
// for a database another connection holds; nil for other errors.
func errClass(err error) error {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_PERM:
		return store.ErrUnusable
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return store.ErrUnavailable
	}
	return nil
}

// sqliteCode returns the primary result code of a SQLite error, 0 for
// other errors.
func sqliteCode(err error) int {
	var e *msqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

func isCorrupt(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

// isForeignKey reports a violated foreign key constraint.
func isForeignKey(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// corruptf returns an error wrapping store.ErrCorrupt for a stored value
// this code cannot read.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), store.ErrCorrupt)
}

// errNotFoundf returns an error wrapping store.ErrNotFound.
func errNotFoundf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), store.ErrNotFound)
}

// notify wakes this Store's waiting claimers.
func (s *Store) notify() {
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// woken returns the channel the next notify closes.
func (s *Store) woken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}

// nowMillis is the wall clock in unix milliseconds, the unit of every
// stored expiry.
func nowMillis() int64 { return time.Now().UnixMilli() }
