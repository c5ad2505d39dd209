package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mgrpo/mgrpo/tools/cache"
)

// cachedFlight answers key from c, else from the one in-flight call of fn
// for key, else by running fn, storing a success in c. fn runs detached from
// the caller's cancellation (bounded by timeout) so that one caller giving
// up does not fail the others sharing the call. It returns the value and
// whether it came from the cache. A value may be shared with other callers
// (see cache.DecodedCache): callers must not modify it.
func cachedFlight[T any](ctx context.Context, c cache.Cache, ttl time.Duration, g *singleflight.Group, key string, timeout time.Duration, fn func(context.Context) (T, error)) (T, bool, error) {
	var zero T
	dc, _ := c.(cache.DecodedCache)
	if dc != nil {
		if v, ok := dc.GetDecoded(ctx, key); ok {
			if t, ok := v.(T); ok {
				return t, true, nil
			}
		}
	}
	if c != nil {
		if b, ok, err := c.Get(ctx, key); err == nil && ok {
			var v T
			if json.Unmarshal(b, &v) == nil {
				if dc != nil {
					dc.AttachDecoded(key, b, v)
				}
				return v, true, nil
			}
		}
	}
	ch := g.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
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
		return v, nil
	})
	select {
	case <-ctx.Done():
		return zero, false, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return zero, false, r.Err
		}
		v, ok := r.Val.(T)
		if !ok {
			return zero, false, fmt.Errorf("shared call returned %T", r.Val)
		}
		return v, false, nil
	}
}
