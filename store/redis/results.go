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
	return s.putResult(ctx, s.keys(run).results(step), fmt.Sprintf("step %d of run %s", step, run), taskID, result)
}

// Result returns the result of task taskID of step (HGET).
func (s *Store) Result(ctx context.Context, run string, step int, taskID string) (json.RawMessage, error) {
	return s.result(ctx, s.keys(run).results(step), fmt.Sprintf("step %d of run %s", step, run), taskID)
}

// ScanResults calls fn with every result of step, each once, stopping at
// fn's first error.
func (s *Store) ScanResults(ctx context.Context, run string, step int, fn func(taskID string, result json.RawMessage) error) error {
	return s.scanResults(ctx, s.keys(run).results(step), fmt.Sprintf("step %d of run %s", step, run), fn)
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
	return s.deleteResults(ctx, s.keys(run).results(step), fmt.Sprintf("step %d of run %s", step, run))
}

// putResult stores a result in the results hash key (of what) unless one
// is stored.
func (s *Store) putResult(ctx context.Context, key, what, taskID string, result json.RawMessage) error {
	if err := s.client.HSetNX(ctx, key, taskID, []byte(result)).Err(); err != nil {
		return fmt.Errorf("put result of task %s of %s: %w", taskID, what, keyErr(key, err))
	}
	return nil
}

// result returns a result of the results hash key.
func (s *Store) result(ctx context.Context, key, what, taskID string) (json.RawMessage, error) {
	v, err := s.client.HGet(ctx, key, taskID).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("read the result of task %s of %s: %w", taskID, what, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read the result of task %s of %s: %w", taskID, what, keyErr(key, err))
	}
	return json.RawMessage(v), nil
}

// scanResults calls fn with every result of the results hash key, each
// once.
func (s *Store) scanResults(ctx context.Context, key, what string, fn func(taskID string, result json.RawMessage) error) error {
	// HSCAN may return a field twice while the hash grows; fn sees it once.
	seen := map[string]bool{}
	var cursor uint64
	for {
		kv, next, err := s.client.HScan(ctx, key, cursor, "", scanCount).Result()
		if err != nil {
			return fmt.Errorf("scan results of %s: %w", what, keyErr(key, err))
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

// deleteResults removes the results hash key (idempotent).
func (s *Store) deleteResults(ctx context.Context, key, what string) error {
	if err := deleteHashScript.Run(ctx, s.client, []string{key}).Err(); err != nil {
		return fmt.Errorf("delete results of %s: %w", what, mapErr(err))
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
