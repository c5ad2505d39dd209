package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mgrpo/mgrpo/tools/cache"
)

// hitSource says where a cached call's value came from.
type hitSource uint8

const (
	// missed: the call (or the identical one in flight) asked upstream.
	missed hitSource = iota
	// localHit: the in-process cache answered.
	localHit
	// sharedHit: the shared cache (the run's store) answered.
	sharedHit
)

// hit reports whether the value came from a cache at all.
func (s hitSource) hit() bool { return s != missed }

// flown is what one flight hands to every caller sharing it.
type flown[T any] struct {
	v   T
	src hitSource
}

// cachedFlight answers key from c, else from the one in-flight call for
// key, else by running fn, storing a success in c. fn runs detached from
// the caller's cancellation (bounded by timeout) so that one caller giving
// up does not fail the others sharing the call. It returns the value and
// where it came from. A value may be shared with other callers (see
// cache.DecodedCache): callers must not modify it.
//
// When c is a *cache.Tiered, its local level is read before the flight and
// its shared level inside it, so that N identical concurrent calls in one
// process cost one read of the shared store, at most one upstream request
// and one write.
func cachedFlight[T any](ctx context.Context, c cache.Cache, ttl time.Duration, g *singleflight.Group, key string, timeout time.Duration, fn func(context.Context) (T, error)) (T, hitSource, error) {
	var zero T
	dc, _ := c.(cache.DecodedCache)
	tc, _ := c.(*cache.Tiered)
	if v, ok := localValue[T](ctx, c, dc, tc, key); ok {
		return v, localHit, nil
	}
	ch := g.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		// A flight for key that ended between the lookup above and this
		// one has filled the local level; asking upstream again would pay
		// twice for the same answer.
		if dc != nil {
			if v, ok := localValue[T](fctx, c, dc, tc, key); ok {
				return flown[T]{v, localHit}, nil
			}
		}
		if tc != nil {
			if b, ok := tc.GetShared(fctx, key); ok {
				var v T
				if json.Unmarshal(b, &v) == nil {
					tc.AttachDecoded(key, b, v)
					return flown[T]{v, sharedHit}, nil
				}
			}
		}
		v, err := fn(fctx)
		if err != nil {
			return nil, err
		}
		if c != nil {
			if b, merr := json.Marshal(v); merr == nil {
				if c.Set(fctx, key, b, ttl) == nil && dc != nil {
					dc.AttachDecoded(key, b, v)
				}
			}
		}
		return flown[T]{v, missed}, nil
	})
	select {
	case <-ctx.Done():
		return zero, missed, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return zero, missed, r.Err
		}
		f, ok := r.Val.(flown[T])
		if !ok {
			return zero, missed, fmt.Errorf("shared call returned %T", r.Val)
		}
		return f.v, f.src, nil
	}
}

// localValue looks key up in c without reaching a shared level: the decoded
// value when c keeps one, else the stored bytes, decoded (and attached for
// the next reader). With a Tiered only its local level is read; any other
// cache is read whole.
func localValue[T any](ctx context.Context, c cache.Cache, dc cache.DecodedCache, tc *cache.Tiered, key string) (T, bool) {
	var zero T
	if c == nil {
		return zero, false
	}
	if dc != nil {
		if v, ok := dc.GetDecoded(ctx, key); ok {
			if t, ok := v.(T); ok {
				return t, true
			}
		}
	}
	var b []byte
	var ok bool
	if tc != nil {
		b, ok = tc.GetLocal(ctx, key)
	} else {
		var err error
		b, ok, err = c.Get(ctx, key)
		ok = ok && err == nil
	}
	if !ok {
		return zero, false
	}
	var v T
	if json.Unmarshal(b, &v) != nil {
		return zero, false
	}
	if dc != nil {
		dc.AttachDecoded(key, b, v)
	}
	return v, true
}
