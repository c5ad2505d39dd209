package cache

import "context"

// DecodedCache is implemented by in-process caches that keep, next to an
// entry's bytes, the Go value they decode to, so that a hit costs a map
// lookup instead of a JSON decode. Tool results are read far more often
// than written (the K rollouts of a query search for the same things), and
// decoding the stored JSON on every hit was most of a cached search's cost.
// Decoded values are shared by every caller: they are read-only.
type DecodedCache interface {
	Cache
	// GetDecoded returns the decoded value attached to key's live entry.
	GetDecoded(ctx context.Context, key string) (any, bool)
	// AttachDecoded attaches v to key's entry if that entry still holds
	// exactly value (the same bytes Get returned or Set stored), so that a
	// later Set with other bytes never pairs them with a stale value.
	AttachDecoded(key string, value []byte, v any)
}
