package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/store"
)

// draws is the hash of a run's draw records, by draw number.
func (k runKeys) draws() string { return k.base + "draws" }

// drawResults is the key of a draw's results.
func (k runKeys) drawResults(n int) string { return k.base + "drawresults:" + strconv.Itoa(n) }

// PutDraw stores the record of draw n (HSET).
func (s *Store) PutDraw(ctx context.Context, run string, n int, record []byte) error {
	key := s.keys(run).draws()
	if record == nil {
		record = []byte{}
	}
	if err := s.client.HSet(ctx, key, strconv.Itoa(n), record).Err(); err != nil {
		return fmt.Errorf("put the record of draw %d of run %s: %w", n, run, keyErr(key, err))
	}
	return nil
}

// Draw returns the record of draw n (HGET).
func (s *Store) Draw(ctx context.Context, run string, n int) ([]byte, error) {
	key := s.keys(run).draws()
	v, err := s.client.HGet(ctx, key, strconv.Itoa(n)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("read the record of draw %d of run %s: %w", n, run, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read the record of draw %d of run %s: %w", n, run, keyErr(key, err))
	}
	return v, nil
}

// PutDrawResult stores the result of a task of draw n unless one is
// stored (HSETNX: the first result wins).
func (s *Store) PutDrawResult(ctx context.Context, run string, n int, taskID string, result json.RawMessage) error {
	return s.putResult(ctx, s.keys(run).drawResults(n), fmt.Sprintf("draw %d of run %s", n, run), taskID, result)
}

// DrawResult returns the result of task taskID of draw n (HGET).
func (s *Store) DrawResult(ctx context.Context, run string, n int, taskID string) (json.RawMessage, error) {
	return s.result(ctx, s.keys(run).drawResults(n), fmt.Sprintf("draw %d of run %s", n, run), taskID)
}

// ScanDrawResults calls fn with every result of draw n, each once.
func (s *Store) ScanDrawResults(ctx context.Context, run string, n int, fn func(taskID string, result json.RawMessage) error) error {
	return s.scanResults(ctx, s.keys(run).drawResults(n), fmt.Sprintf("draw %d of run %s", n, run), fn)
}

// DeleteDrawResults removes draw n's results (idempotent).
func (s *Store) DeleteDrawResults(ctx context.Context, run string, n int) error {
	return s.deleteResults(ctx, s.keys(run).drawResults(n), fmt.Sprintf("draw %d of run %s", n, run))
}
