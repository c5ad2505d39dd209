package store

import (
	"context"
	"encoding/json"
	"time"
)

// WriteKind says which of a store's write-behind writes a Write is.
type WriteKind uint8

// The writes a store may take several at a time: those the farm makes
// once per rollout or per call (results, draws' results, cache entries,
// the replay recording's entries).
const (
	// WriteResult is Results.PutResult of (Run, Key as the step, TaskID,
	// Value).
	WriteResult WriteKind = iota + 1
	// WriteDrawResult is Draws.PutDrawResult of (Run, Key as the draw,
	// TaskID, Value).
	WriteDrawResult
	// WriteCache is Cache.Set of (TaskID as the key, Value, TTL).
	WriteCache
)

// Write is one write of a batch (see Batcher).
type Write struct {
	Kind WriteKind
	Run  string
	// Key is the step of a result, the draw of a draw's result.
	Key int
	// TaskID is a result's task id, a cache entry's key.
	TaskID string
	Value  json.RawMessage
	// TTL is a cache entry's time to live (≤ 0: DefaultCacheTTL).
	TTL time.Duration
}

// Batcher is implemented by a backend that applies several writes at once,
// cheaper than one call each (one SQLite transaction, one Redis round
// trip). WriteBehind uses it when the backend has it.
type Batcher interface {
	// ApplyWrites applies ws in order, each with the meaning of its own
	// method (a result's first stored wins, a cache entry is replaced).
	// It applies all or, on an error, possibly none or only some of them:
	// each write is idempotent, so the caller applies the whole batch
	// again.
	ApplyWrites(ctx context.Context, ws []Write) error
}

// ApplyWrites applies ws to st, as one batch when st is a Batcher, else
// one call each in order.
func ApplyWrites(ctx context.Context, st Store, ws []Write) error {
	if b, ok := st.(Batcher); ok {
		return b.ApplyWrites(ctx, ws)
	}
	for _, w := range ws {
		var err error
		switch w.Kind {
		case WriteResult:
			err = st.PutResult(ctx, w.Run, w.Key, w.TaskID, w.Value)
		case WriteDrawResult:
			err = st.PutDrawResult(ctx, w.Run, w.Key, w.TaskID, w.Value)
		case WriteCache:
			err = st.Set(ctx, w.TaskID, w.Value, w.TTL)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
