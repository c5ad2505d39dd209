package farm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// ChatModel is a judge model: one system and user prompt, one answer (the
// benchmarks' score.ChatModel has this shape).
type ChatModel interface {
	Complete(ctx context.Context, system, user string) (string, error)
}

// CachedJudge is a judge model whose answers are kept in the new run's
// store, keyed by the model and the exact prompt: a rescore asks the model
// only what neither the new nor the recorded run's store answers. Safe for
// concurrent use.
type CachedJudge struct {
	model         ChatModel
	name          string
	dst, src      store.Cache
	calls, cached atomic.Int64
}

var _ ChatModel = (*CachedJudge)(nil)

// NewCachedJudge caches model's (named name) answers in dst, looking them
// up in dst, then src (either may be nil).
func NewCachedJudge(model ChatModel, name string, dst, src store.Cache) *CachedJudge {
	return &CachedJudge{model: model, name: name, dst: dst, src: src}
}

// Calls counts the answers asked of the model, Cached those found in a
// store.
func (j *CachedJudge) Calls() int64  { return j.calls.Load() }
func (j *CachedJudge) Cached() int64 { return j.cached.Load() }

// judgeCacheTTL keeps a judge's answers as long as the run directory.
const judgeCacheTTL = 100 * 365 * 24 * time.Hour

// judgeCacheKey is a judge answer's cache key.
func judgeCacheKey(model, system, user string) string {
	h := sha256.New()
	for _, s := range []string{model, system, user} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "judge/" + hex.EncodeToString(h.Sum(nil))
}

// Complete answers from the new run's store, else the recorded run's
// (copied into the new one), else the model (kept in the new one).
func (j *CachedJudge) Complete(ctx context.Context, system, user string) (string, error) {
	key := judgeCacheKey(j.name, system, user)
	for i, c := range []store.Cache{j.dst, j.src} {
		if c == nil {
			continue
		}
		if v, ok, err := c.Get(ctx, key); err == nil && ok {
			j.cached.Add(1)
			if i == 1 && j.dst != nil {
				if err := j.dst.Set(ctx, key, v, judgeCacheTTL); err != nil {
					return "", fmt.Errorf("cache the judge's answer: %w", err)
				}
			}
			return string(v), nil
		}
	}
	j.calls.Add(1)
	out, err := j.model.Complete(ctx, system, user)
	if err != nil {
		return "", err
	}
	if j.dst != nil {
		if err := j.dst.Set(ctx, key, []byte(out), judgeCacheTTL); err != nil {
			return "", fmt.Errorf("cache the judge's answer: %w", err)
		}
	}
	return out, nil
}
