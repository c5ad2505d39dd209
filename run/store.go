package run

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/redact"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/backends"
)

// EnvStorePassword names the environment variable holding the Redis
// store's password, so it stays out of flags and files; a password in the
// URL itself is used as given (and redacted wherever the URL is shown).
const EnvStorePassword = "MGRPO_STORE_PASSWORD"

// StoreNone is the store key's value that keeps results in memory.
const StoreNone = "none"

// StoreFile is the embedded store's file name inside the run directory.
const StoreFile = farm.StoreFile

// CheckStoreURL checks a store key's value: empty (the default), none, or a
// URL of a known scheme.
func CheckStoreURL(raw string) error {
	if raw == "" || raw == StoreNone {
		return nil
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return fmt.Errorf("%q: want sqlite://PATH, redis://HOST:PORT/DB, rediss://… or none", redact.URL(raw))
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "redis", "rediss":
		return nil
	}
	return fmt.Errorf("%q: unknown scheme %q (want sqlite, redis, rediss or none)", redact.URL(raw), scheme)
}

// StoreURL returns the URL of c's store: the store key, or the embedded
// sqlite://OUT/store.db; "" with store: none.
func (c Config) StoreURL() string {
	switch c.Store {
	case StoreNone:
		return ""
	case "":
		return "sqlite://" + filepath.ToSlash(filepath.Join(c.Out, StoreFile))
	}
	return c.Store
}

// Shared reports whether c's store is shared across machines (Redis).
func (c Config) Shared() bool {
	u := strings.ToLower(c.StoreURL())
	return strings.HasPrefix(u, "redis://") || strings.HasPrefix(u, "rediss://")
}

// Queue says how c's rollouts run: from the store's queue or directly, and
// how many at a time this process runs itself.
func (c Config) Queue() (queued bool, local int) {
	switch {
	case c.StoreURL() == "":
		return false, c.Concurrency.Rollouts()
	case c.Workers >= 0:
		return true, c.Workers
	case c.Shared():
		return true, c.Concurrency.Rollouts()
	}
	return false, c.Concurrency.Rollouts()
}

// OpenStore opens c's store (nil and no error with store: none) behind a
// write-behind buffer of store.DefaultWriteBehind: results, cache and
// recording entries are applied several at a time, and a crash loses at
// most that bound of them (redone on resume). A Redis URL without a
// password takes it from MGRPO_STORE_PASSWORD when set. An error names the
// URL with its password redacted.
func OpenStore(ctx context.Context, c Config, getenv func(string) string) (store.Store, error) {
	raw := c.StoreURL()
	if raw == "" {
		return nil, nil
	}
	if c.Shared() {
		raw = backends.WithPassword(raw, getenv(EnvStorePassword))
	}
	st, err := backends.Open(ctx, raw)
	if err != nil {
		// The backends' errors name the URL (its password redacted).
		return nil, fmt.Errorf("the run's store (--store): %w", err)
	}
	return store.NewWriteBehind(st, store.DefaultWriteBehind), nil
}

// RunRecordConfig returns c as the run's record in the store holds it, for
// workers and for checking that a resumed run is the same run: without
// what may differ between processes or between a run and its resume (the
// output directory, concurrency, grace, steps, the store itself).
func (c Config) RunRecordConfig() (json.RawMessage, error) {
	c.Out, c.Concurrency, c.Grace, c.Steps, c.Store, c.Workers = "", Concurrency{}, Duration{}, 0, "", 0
	// Each process hosts its own gateway (a worker listens on the run's
	// gateway address too), and agents reach each at its own address.
	c.Gateway.URL = ""
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	return b, nil
}

// ConfigFromRunRecord returns the configuration a run record holds, for a
// worker: over the defaults, so that keys added since keep their default.
func ConfigFromRunRecord(raw json.RawMessage) (Config, error) {
	c := DefaultConfig()
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("run record's configuration: %w", err)
	}
	return c, nil
}
