package cache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Tiered is a two-level Cache: a fast in-process level (the local LRU, which
// keeps decoded values) in front of a shared level that every worker of a
// run, and every run pointed at the same store, reads and writes (the
// store's Cache: SQLite on one machine, Redis across machines).
//
// A read tries the local level, then the shared one; a shared hit fills the
// local level for the time the shared entry has left. A write goes to both.
// The shared level is a saving, never a dependency: its failures (errors,
// timeouts, entries that do not decode) count as misses, are counted and
// logged, and never fail a read or a write. Tiered is safe for concurrent
// use.
type Tiered struct {
	local   Cache
	decoded DecodedCache // local as a DecodedCache, or nil
	shared  Cache
	ns      string // suffix of the shared level's keys, "" for none
	ttl     time.Duration
	timeout time.Duration
	onError func(op string, err error)
	logger  *slog.Logger
	now     func() time.Time

	hits, misses, errs atomic.Int64

	logMu    sync.Mutex
	lastLog  time.Time
	unlogged int64
}

// TieredConfig configures NewTiered.
type TieredConfig struct {
	// Local is the in-process level; required.
	Local Cache
	// Shared is the shared level; nil makes the Tiered its local level
	// alone.
	Shared Cache
	// Namespace separates the shared level's entries of callers whose
	// answers differ for the same key: Tiereds share entries only when
	// their namespaces are equal. It enters the shared keys hashed, so it
	// may name URLs and paths without writing them to the store.
	Namespace string
	// TTL is the lifetime of an entry written with ttl ≤ 0, in both levels
	// (0: one hour, the LRU's default).
	TTL time.Duration
	// Timeout bounds one call to the shared level (0: 5s), so that a store
	// that hangs costs a tool call seconds, not its whole timeout.
	Timeout time.Duration
	// OnError, when set, is called on each failure of the shared level with
	// the operation ("get", "set"): a metrics hook.
	OnError func(op string, err error)
	// Logger receives the shared level's failures, at most one line per
	// minute with the count since the last (nil: discarded).
	Logger *slog.Logger
}

// TieredStats counts what the shared level did for a Tiered's reads.
type TieredStats struct {
	// SharedHits and SharedMisses count reads that reached the shared level
	// (they missed the local one) and found, or did not find, a live entry.
	// Failed reads count as misses as well as in SharedErrors.
	SharedHits, SharedMisses int64
	// SharedErrors counts failed shared reads and writes.
	SharedErrors int64
}

// ErrBadEntry is the failure reported (to OnError and the log) for a shared
// entry that is not in the Tiered layout: written by something else, or
// damaged.
var ErrBadEntry = errors.New("shared cache entry not in the tiered layout")

// The shared level stores each value behind a header: one version byte and
// the entry's expiry (Unix milliseconds, big-endian), so that a worker
// filling its local level from the shared one keeps the entry no longer
// than the writer meant, whatever TTL the shared backend applied.
const (
	entryVersion = 1
	headerLen    = 1 + 8
	logEvery     = time.Minute
)

var _ DecodedCache = (*Tiered)(nil)

// NewTiered returns the two-level cache of cfg. It panics when cfg.Local is
// nil, a programming error.
func NewTiered(cfg TieredConfig) *Tiered {
	if cfg.Local == nil {
		panic("cache.NewTiered: no local level")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ns := ""
	if cfg.Namespace != "" {
		h := sha256.Sum256([]byte(cfg.Namespace))
		ns = "@" + hex.EncodeToString(h[:8])
	}
	dc, _ := cfg.Local.(DecodedCache)
	return &Tiered{local: cfg.Local, decoded: dc, shared: cfg.Shared, ns: ns, ttl: cfg.TTL, timeout: cfg.Timeout,
		onError: cfg.OnError, logger: cfg.Logger, now: time.Now}
}

// Get implements Cache: the local level, then the shared one (see
// GetShared). It never returns an error.
func (t *Tiered) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if v, ok := t.GetLocal(ctx, key); ok {
		return v, true, nil
	}
	v, ok := t.GetShared(ctx, key)
	return v, ok, nil
}

// GetLocal looks key up in the local level only.
func (t *Tiered) GetLocal(ctx context.Context, key string) ([]byte, bool) {
	v, ok, err := t.local.Get(ctx, key)
	return v, ok && err == nil
}

// GetShared looks key up in the shared level only and, on a hit, stores the
// value in the local level for the entry's remaining lifetime. It returns
// the value as the local level holds it (see DecodedCache.AttachDecoded).
// A failure of the shared level is a miss. Without a shared level it always
// misses and counts nothing.
func (t *Tiered) GetShared(ctx context.Context, key string) ([]byte, bool) {
	if t.shared == nil {
		return nil, false
	}
	sctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	raw, ok, err := t.shared.Get(sctx, key+t.ns)
	if err != nil {
		t.misses.Add(1)
		t.fail("get", key, err)
		return nil, false
	}
	if !ok {
		t.misses.Add(1)
		return nil, false
	}
	value, expires, err := unwrap(raw)
	if err != nil {
		t.misses.Add(1)
		t.fail("get", key, err)
		return nil, false
	}
	left := expires.Sub(t.now())
	if left <= 0 {
		// The writer's clock says it expired; the backend's TTL, applied
		// by another clock, did not catch it yet.
		t.misses.Add(1)
		return nil, false
	}
	t.hits.Add(1)
	// A local level that cannot store the value still lets this read hit.
	_ = t.local.Set(ctx, key, value, left)
	return value, true
}

// Set implements Cache: value goes to the local level and, behind its
// header, to the shared one, both for ttl (ttl ≤ 0: the configured TTL). A
// failure of the shared level is counted and logged, not returned; the error
// is the local level's (the LRU never fails). Callers must not modify value
// afterwards.
func (t *Tiered) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = t.ttl
	}
	err := t.local.Set(ctx, key, value, ttl)
	if t.shared != nil {
		sctx, cancel := context.WithTimeout(ctx, t.timeout)
		defer cancel()
		if serr := t.shared.Set(sctx, key+t.ns, wrap(value, t.now().Add(ttl)), ttl); serr != nil {
			t.fail("set", key, serr)
		}
	}
	return err
}

// GetDecoded implements DecodedCache over the local level (false when the
// local level keeps no decoded values).
func (t *Tiered) GetDecoded(ctx context.Context, key string) (any, bool) {
	if t.decoded == nil {
		return nil, false
	}
	return t.decoded.GetDecoded(ctx, key)
}

// AttachDecoded implements DecodedCache over the local level.
func (t *Tiered) AttachDecoded(key string, value []byte, v any) {
	if t.decoded != nil {
		t.decoded.AttachDecoded(key, value, v)
	}
}

// Stats returns the shared level's counts so far.
func (t *Tiered) Stats() TieredStats {
	return TieredStats{SharedHits: t.hits.Load(), SharedMisses: t.misses.Load(), SharedErrors: t.errs.Load()}
}

// fail counts a failure of the shared level and logs it, at most once per
// logEvery: a store that is down fails every call, and one line a minute
// says so as well as thousands.
func (t *Tiered) fail(op, key string, err error) {
	t.errs.Add(1)
	if t.onError != nil {
		t.onError(op, err)
	}
	t.logMu.Lock()
	now := t.now()
	t.unlogged++
	if !t.lastLog.IsZero() && now.Sub(t.lastLog) < logEvery {
		t.logMu.Unlock()
		return
	}
	n := t.unlogged
	t.lastLog, t.unlogged = now, 0
	t.logMu.Unlock()
	t.logger.Warn("shared tool cache failed; treated as a miss", "op", op, "key", key, "err", err, "failures", n)
}

// wrap returns value behind the shared level's header.
func wrap(value []byte, expires time.Time) []byte {
	b := make([]byte, headerLen+len(value))
	b[0] = entryVersion
	binary.BigEndian.PutUint64(b[1:headerLen], uint64(expires.UnixMilli()))
	copy(b[headerLen:], value)
	return b
}

// unwrap splits a shared entry into its value and expiry.
func unwrap(b []byte) ([]byte, time.Time, error) {
	if len(b) < headerLen || b[0] != entryVersion {
		return nil, time.Time{}, ErrBadEntry
	}
	ms := binary.BigEndian.Uint64(b[1:headerLen])
	return b[headerLen:], time.UnixMilli(int64(ms)), nil
}
