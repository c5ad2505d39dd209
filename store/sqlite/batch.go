package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

var _ store.Batcher = (*Store)(nil)

// ApplyWrites applies ws in one transaction: one commit (one set of WAL
// frames for the pages the batch touched) instead of one a write.
func (s *Store) ApplyWrites(ctx context.Context, ws []store.Write) error {
	op := fmt.Sprintf("apply %d writes", len(ws))
	if err := s.alive(); err != nil {
		return s.errf(op, err)
	}
	if len(ws) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.errf(op, err)
	}
	defer tx.Rollback()
	now := time.Now()
	// The results go to their steps' files, one write a file (see
	// resultfile.go), in the order they came.
	type target struct {
		t   resultTable
		run string
		key int
	}
	var (
		order []target
		files = map[target][]fileWrite{}
	)
	for _, w := range ws {
		var err error
		switch w.Kind {
		case store.WriteResult, store.WriteDrawResult:
			t := stepResults
			if w.Kind == store.WriteDrawResult {
				t = drawResults
			}
			if len(w.Value) == 0 {
				return s.errf(op, fmt.Errorf("result of task %s: %w", w.TaskID, errors.New("empty result")))
			}
			k := target{t, w.Run, w.Key}
			if _, ok := files[k]; !ok {
				order = append(order, k)
			}
			files[k] = append(files[k], fileWrite{w.TaskID, w.Value})
		case store.WriteCache:
			ttl := w.TTL
			if ttl <= 0 {
				ttl = store.DefaultCacheTTL
			}
			value := []byte(w.Value)
			if value == nil {
				value = []byte{}
			}
			exp := max(now.Add(ttl).UnixMilli(), now.UnixMilli()+1)
			_, err = tx.ExecContext(ctx, `INSERT INTO cache (key, value, expires_ms) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_ms = excluded.expires_ms`, w.TaskID, value, exp)
		default:
			err = fmt.Errorf("unknown write kind %d", w.Kind)
		}
		if err != nil {
			return s.errf(op, err)
		}
	}
	for _, k := range order {
		if err := s.appendResults(ctx, tx, k.t, k.run, k.key, files[k]); err != nil {
			return s.errf(op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errf(op, err)
	}
	return nil
}
