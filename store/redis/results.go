package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/store"
)

// scanCount is the COUNT hint of ScanResults' HSCAN calls.
const scanCount = 256

// PutResult stores the result of a task unless one is stored (HSETNX: the
// first result wins).
func (s *Store) PutResult(ctx context.Context, run string, step int, taskID string, result json.RawMessage) error {
	key := s.keys(run).results(step)
	if err := s.client.HSetNX(ctx, key, taskID, []byte(result)).Err(); err != nil {
		return fmt.Errorf("put result of task %s of step %d of run %s: %w", taskID, step, run, keyErr(key, err))
	}
	return nil
}

// Result returns the result of task taskID of step (HGET).
func (s *Store) Result(ctx context.Context, run string, step int, taskID string) (json.RawMessage, error) {
	key := s.keys(run).results(step)
	v, err := s.client.HGet(ctx, key, taskID).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("read the result of task %s of step %d of run %s: %w", taskID, step, run, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read the result of task %s of step %d of run %s: %w", taskID, step, run, keyErr(key, err))
	}
	return json.RawMessage(v), nil
}

// ScanResults calls fn with every result of step, each once, stopping at
// fn's first error.
func (s *Store) ScanResults(ctx context.Context, run string, step int, fn func(taskID string, result json.RawMessage) error) error {
	key := s.keys(run).results(step)
	// HSCAN may return a field twice while the hash grows; fn sees it once.
	seen := map[string]bool{}
	var cursor uint64
	for {
		kv, next, err := s.client.HScan(ctx, key, cursor, "", scanCount).Result()
		if err != nil {
			return fmt.Errorf("scan results of step %d of run %s: %w", step, run, keyErr(key, err))
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if seen[kv[i]] {
				continue
			}
			seen[kv[i]] = true
			if err := fn(kv[i], json.RawMessage(kv[i+1])); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// CountResults returns how many results step holds.
func (s *Store) CountResults(ctx context.Context, run string, step int) (int, error) {
	key := s.keys(run).results(step)
	n, err := s.client.HLen(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("count results of step %d of run %s: %w", step, run, keyErr(key, err))
	}
	return int(n), nil
}

// DeleteResults removes step's results (idempotent).
func (s *Store) DeleteResults(ctx context.Context, run string, step int) error {
	if err := deleteHashScript.Run(ctx, s.client, []string{s.keys(run).results(step)}).Err(); err != nil {
		return fmt.Errorf("delete results of step %d of run %s: %w", step, run, mapErr(err))
	}
	return nil
}

// Get returns the cached value of key, if any and not expired.
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	k := s.cacheKey(key)
	v, err := s.client.Get(ctx, k).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache get %s: %w", key, keyErr(k, err))
	}
	return v, true, nil
}

// Set caches value under key for ttl (store.DefaultCacheTTL when ttl ≤ 0).
func (s *Store) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = store.DefaultCacheTTL
	}
	if err := setCacheScript.Run(ctx, s.client, []string{s.cacheKey(key)}, value, millis(ttl)).Err(); err != nil {
		return fmt.Errorf("cache set %s: %w", key, mapErr(err))
	}
	return nil
}
