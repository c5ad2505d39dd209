package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mgrpo/mgrpo/store"
)

var _ store.Batcher = (*Store)(nil)

// ApplyWrites sends ws in one pipeline: one round trip instead of one a
// write. Redis runs them in order; a wrong-typed key fails its write and
// the batch reports it (ErrCorrupt), the others applied.
func (s *Store) ApplyWrites(ctx context.Context, ws []store.Write) error {
	if len(ws) == 0 {
		return nil
	}
	pipe := s.client.Pipeline()
	keys := make([]string, len(ws))
	cmds := make([]goredis.Cmder, len(ws))
	for i, w := range ws {
		switch w.Kind {
		case store.WriteResult:
			keys[i] = s.keys(w.Run).results(w.Key)
			cmds[i] = pipe.HSetNX(ctx, keys[i], w.TaskID, []byte(w.Value))
		case store.WriteDrawResult:
			keys[i] = s.keys(w.Run).drawResults(w.Key)
			cmds[i] = pipe.HSetNX(ctx, keys[i], w.TaskID, []byte(w.Value))
		case store.WriteCache:
			ttl := w.TTL
			if ttl <= 0 {
				ttl = store.DefaultCacheTTL
			}
			keys[i] = s.cacheKey(w.TaskID)
			// EVAL, not EVALSHA: a pipeline cannot load a script a
			// NOSCRIPT reply asks for.
			cmds[i] = setCacheScript.Eval(ctx, pipe, []string{keys[i]}, []byte(w.Value), millis(ttl))
		default:
			return fmt.Errorf("apply %d writes: unknown write kind %d", len(ws), w.Kind)
		}
	}
	_, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	for i, c := range cmds {
		if c.Err() != nil {
			return fmt.Errorf("apply %d writes: write %d (%s): %w", len(ws), i, ws[i].TaskID, keyErr(keys[i], c.Err()))
		}
	}
	return fmt.Errorf("apply %d writes: %w", len(ws), mapErr(err))
}
