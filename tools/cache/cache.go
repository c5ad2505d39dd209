// Package cache defines the tool-result cache: a small interface keyed by
// (tool, provider, normalized arguments) with a TTL per entry, and an
// in-memory LRU implementation. The store package adds SQLite and Redis
// implementations of the same interface.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode"
)

// Cache stores tool results. Implementations are safe for concurrent use.
type Cache interface {
	// Get returns the value stored under key and true, or nil and false
	// when the key is absent or its entry has expired. An error means the
	// backend failed; callers treat it as a miss.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl (ttl ≤ 0: the backend's default),
	// replacing any previous value. It is idempotent.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// Key builds the cache key of a call: the tool, the provider and the
// normalized arguments (see Normalize), hashed so keys have a fixed length.
func Key(tool, provider string, args ...string) string {
	h := sha256.New()
	for _, p := range append([]string{tool, provider}, args...) {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return tool + ":" + provider + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Normalize folds an argument so trivially different spellings share a
// cache entry: Unicode spaces collapse to one ASCII space, leading and
// trailing space go, and letters are lower-cased.
func Normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
