package cache

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeShared is a shared level that keeps entries forever (expiry is left
// to the Tiered's header), counts its calls and fails while err is set.
type fakeShared struct {
	mu         sync.Mutex
	m          map[string][]byte
	ttls       map[string]time.Duration
	gets, sets atomic.Int64
	err        error
}

func newFakeShared() *fakeShared {
	return &fakeShared{m: map[string][]byte{}, ttls: map[string]time.Duration{}}
}

func (f *fakeShared) Get(_ context.Context, key string) ([]byte, bool, error) {
	f.gets.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, false, f.err
	}
	v, ok := f.m[key]
	return v, ok, nil
}

func (f *fakeShared) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	f.sets.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.m[key], f.ttls[key] = value, ttl
	return nil
}

func (f *fakeShared) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// clock is a settable time shared by the levels under test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// worker returns a Tiered over a fresh LRU and shared, both on clk.
func worker(shared Cache, clk *clock, cfg TieredConfig) (*Tiered, *LRU) {
	lru := NewLRU(100, time.Hour)
	lru.now = clk.now
	cfg.Local, cfg.Shared = lru, shared
	t := NewTiered(cfg)
	t.now = clk.now
	return t, lru
}

func TestTieredLocalHit(t *testing.T) {
	ctx := context.Background()
	shared := newFakeShared()
	tc, _ := worker(shared, &clock{time.Unix(1000, 0)}, TieredConfig{})
	if err := tc.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if got, want := shared.sets.Load(), int64(1); got != want {
		t.Fatalf("shared writes = %d, want %d", got, want)
	}
	v, ok, err := tc.Get(ctx, "k")
	if err != nil || !ok || string(v) != "v" {
		t.Fatalf("Get = %q, %v, %v; want v, true, nil", v, ok, err)
	}
	if got := shared.gets.Load(); got != 0 {
		t.Errorf("a local hit read the shared level %d times", got)
	}
	if got := tc.Stats(); got != (TieredStats{}) {
		t.Errorf("Stats = %+v after a local hit, want zero", got)
	}
}

func TestTieredSharedHitFillsLocal(t *testing.T) {
	ctx := context.Background()
	clk := &clock{time.Unix(1000, 0)}
	shared := newFakeShared()
	a, _ := worker(shared, clk, TieredConfig{})
	b, bLocal := worker(shared, clk, TieredConfig{})

	if _, ok, _ := b.Get(ctx, "k"); ok {
		t.Fatal("hit before anything was written")
	}
	_ = a.Set(ctx, "k", []byte("from a"), time.Minute)
	v, ok, err := b.Get(ctx, "k")
	if err != nil || !ok || string(v) != "from a" {
		t.Fatalf("worker b: Get = %q, %v, %v; want a's value", v, ok, err)
	}
	if got, want := b.Stats(), (TieredStats{SharedHits: 1, SharedMisses: 1}); got != want {
		t.Errorf("b's Stats = %+v, want %+v", got, want)
	}
	if lv, ok, _ := bLocal.Get(ctx, "k"); !ok || string(lv) != "from a" {
		t.Fatalf("the shared hit did not fill b's local level: %q, %v", lv, ok)
	}
	// The value returned is the one the local level holds, so a decoded
	// value attached to it is kept.
	b.AttachDecoded("k", v, "decoded")
	if d, ok := b.GetDecoded(ctx, "k"); !ok || d != "decoded" {
		t.Errorf("GetDecoded after a shared hit = %v, %v", d, ok)
	}
	gets := shared.gets.Load()
	if _, ok, _ := b.Get(ctx, "k"); !ok {
		t.Fatal("second read missed")
	}
	if got := shared.gets.Load(); got != gets {
		t.Errorf("the second read went to the shared level (%d reads, want %d)", got, gets)
	}
}

func TestTieredSharedFailureIsAMiss(t *testing.T) {
	ctx := context.Background()
	clk := &clock{time.Unix(1000, 0)}
	shared := newFakeShared()
	var logs logRecorder
	var ops []string
	tc, _ := worker(shared, clk, TieredConfig{
		Logger:  slog.New(&logs),
		OnError: func(op string, err error) { ops = append(ops, op) },
	})
	down := errors.New("store down")
	shared.fail(down)

	if err := tc.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatalf("Set with the shared level down = %v, want nil", err)
	}
	if v, ok, err := tc.Get(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("local level lost the value: %q, %v, %v", v, ok, err)
	}
	for range 3 {
		if v, ok, err := tc.Get(ctx, "absent"); err != nil || ok {
			t.Fatalf("Get with the shared level down = %q, %v, %v; want a miss without error", v, ok, err)
		}
	}
	if got, want := tc.Stats(), (TieredStats{SharedMisses: 3, SharedErrors: 4}); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if got, want := len(ops), 4; got != want || ops[0] != "set" || ops[1] != "get" {
		t.Errorf("OnError ops = %v, want set then three gets", ops)
	}
	// Four failures within a minute: one line. A minute later the next
	// failure logs again, counting the three it did not log.
	if got := logs.count(); got != 1 {
		t.Fatalf("%d log lines for four failures in a minute, want 1", got)
	}
	clk.t = clk.t.Add(time.Minute)
	_, _, _ = tc.Get(ctx, "absent")
	if got := logs.count(); got != 2 {
		t.Fatalf("%d log lines after a minute, want 2", got)
	}
	if got, want := logs.last("failures"), int64(4); got != want {
		t.Errorf("second line counts %d failures, want %d", got, want)
	}

	// An entry not in the tiered layout is a miss and a failure.
	shared.fail(nil)
	_ = shared.Set(ctx, "foreign", []byte("raw bytes"), 0)
	if _, ok, _ := tc.Get(ctx, "foreign"); ok {
		t.Error("an entry without the header was served")
	}
	if got := tc.Stats().SharedErrors; got != 6 {
		t.Errorf("SharedErrors = %d after a foreign entry, want 6", got)
	}
}

func TestTieredTTL(t *testing.T) {
	ctx := context.Background()
	clk := &clock{time.Unix(1000, 0)}
	shared := newFakeShared()
	a, _ := worker(shared, clk, TieredConfig{TTL: 30 * time.Second})
	b, _ := worker(shared, clk, TieredConfig{TTL: 30 * time.Second})

	_ = a.Set(ctx, "short", []byte("v"), 10*time.Second)
	_ = a.Set(ctx, "default", []byte("v"), 0)
	if got, want := shared.ttls["short"], 10*time.Second; got != want {
		t.Errorf("shared TTL of short = %v, want %v", got, want)
	}
	if got, want := shared.ttls["default"], 30*time.Second; got != want {
		t.Errorf("shared TTL of an entry written with none = %v, want the configured %v", got, want)
	}

	// b fills its local level 4 s after the write: the copy lives the 6 s
	// the entry has left, not another 10.
	clk.t = clk.t.Add(4 * time.Second)
	if _, ok, _ := b.Get(ctx, "short"); !ok {
		t.Fatal("b missed a live entry")
	}
	clk.t = clk.t.Add(5 * time.Second)
	if _, ok := b.GetLocal(ctx, "short"); !ok {
		t.Fatal("b's local copy expired early")
	}
	clk.t = clk.t.Add(2 * time.Second) // 11 s after the write
	if _, ok := b.GetLocal(ctx, "short"); ok {
		t.Error("b's local copy outlived the entry")
	}
	// The fake shared level never expires anything: the header does.
	for name, c := range map[string]*Tiered{"a": a, "b": b} {
		if _, ok, _ := c.Get(ctx, "short"); ok {
			t.Errorf("%s served an entry past its TTL", name)
		}
	}
	if _, ok, _ := b.Get(ctx, "default"); !ok {
		t.Error("the default-TTL entry expired early")
	}
	clk.t = clk.t.Add(20 * time.Second)
	if _, ok, _ := b.Get(ctx, "default"); ok {
		t.Error("the default-TTL entry outlived the configured TTL")
	}
}

func TestTieredNamespaces(t *testing.T) {
	ctx := context.Background()
	clk := &clock{time.Unix(1000, 0)}
	shared := newFakeShared()
	a, _ := worker(shared, clk, TieredConfig{Namespace: "serper https://sim-a.example"})
	same, _ := worker(shared, clk, TieredConfig{Namespace: "serper https://sim-a.example"})
	other, _ := worker(shared, clk, TieredConfig{Namespace: "serper https://sim-b.example"})
	_ = a.Set(ctx, "k", []byte("v"), 0)
	if _, ok, _ := same.Get(ctx, "k"); !ok {
		t.Error("equal namespaces do not share")
	}
	if _, ok, _ := other.Get(ctx, "k"); ok {
		t.Error("another namespace read the entry")
	}
	for k := range shared.m {
		if strings.Contains(k, "sim-a") {
			t.Errorf("the namespace is written in clear in the key %q", k)
		}
	}
}

func TestTieredWithoutSharedLevel(t *testing.T) {
	ctx := context.Background()
	tc := NewTiered(TieredConfig{Local: NewLRU(10, time.Hour)})
	_ = tc.Set(ctx, "k", []byte("v"), 0)
	if _, ok, _ := tc.Get(ctx, "k"); !ok {
		t.Error("local level alone lost the value")
	}
	if _, ok := tc.GetShared(ctx, "k"); ok {
		t.Error("GetShared hit without a shared level")
	}
	if got := tc.Stats(); got != (TieredStats{}) {
		t.Errorf("Stats = %+v without a shared level, want zero", got)
	}
}

// logRecorder is a slog.Handler keeping its records.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// last returns the int attribute key of the last record (0 if absent).
func (l *logRecorder) last(key string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	l.recs[len(l.recs)-1].Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			n = a.Value.Int64()
			return false
		}
		return true
	})
	return n
}
