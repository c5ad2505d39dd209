package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// sweepBatch is how many expired cache entries one sweep statement
// deletes, so that a sweep never holds the write lock for long.
const sweepBatch = 1000

// Get returns the value stored under key and true, or nil and false when
// the key is absent or expired.
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := s.alive(); err != nil {
		return nil, false, s.errf("cache get", err)
	}
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM cache WHERE key = ? AND expires_ms > ?`, key, nowMillis()).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.errf("cache get", err)
	}
	if v == nil {
		// The driver reads an empty blob as nil.
		v = []byte{}
	}
	return v, true, nil
}

// Set stores value under key for ttl (ttl ≤ 0: store.DefaultCacheTTL),
// replacing any previous value.
func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := s.alive(); err != nil {
		return s.errf("cache set", err)
	}
	if ttl <= 0 {
		ttl = store.DefaultCacheTTL
	}
	if value == nil {
		value = []byte{}
	}
	now := time.Now()
	exp := max(now.Add(ttl).UnixMilli(), now.UnixMilli()+1)
	_, err := s.w.ExecContext(ctx, `INSERT INTO cache (key, value, expires_ms) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_ms = excluded.expires_ms`, key, value, exp)
	if err != nil {
		return s.errf("cache set", err)
	}
	return nil
}

// sweep deletes expired cache entries every sweep interval until Close.
// Every process sharing the file sweeps; the deletes are idempotent.
func (s *Store) sweep() {
	defer s.sweeper.Done()
	t := time.NewTicker(s.cfg.sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		}
		// A failed sweep leaves expired entries, which are misses anyway;
		// the next tick tries again.
		_, _ = s.SweepCache(s.life)
	}
}

// SweepCache deletes the cache entries that expired and returns how many
// it deleted. Open's sweeper calls it every cache sweep interval.
func (s *Store) SweepCache(ctx context.Context) (int64, error) {
	var total int64
	for {
		if err := s.alive(); err != nil {
			return total, s.errf("sweep the cache", err)
		}
		res, err := s.w.ExecContext(ctx, `DELETE FROM cache WHERE rowid IN (SELECT rowid FROM cache WHERE expires_ms <= ? LIMIT ?)`,
			nowMillis(), sweepBatch)
		if err != nil {
			return total, s.errf("sweep the cache", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, s.errf("sweep the cache", err)
		}
		total += n
		if n < sweepBatch {
			return total, nil
		}
	}
}
