package weightsync

import (
	"context"
	"strconv"
)

// none is the sync of a trainer that pushes weights to the servers
// itself: it loads nothing and, when Options.VersionPath is set, waits for
// every endpoint to report the new version.
type none struct{ *base }

var _ Syncer = (*none)(nil)

func (n *none) Sync(ctx context.Context, role, ref string, version int64, step int) error {
	if n.o.VersionPath == "" || len(n.eps) == 0 {
		return nil
	}
	// No path is loaded, so a missing reference is no error here.
	t := target{role: role, version: version, want: strconv.FormatInt(version, 10), vars: templateVars(role, ref, version, step)}
	return n.run(ctx, t, func(ctx context.Context, ep endpoint, t target, p *progress) (string, error) {
		if err := n.verify(ctx, ep, t); err != nil {
			return StageVerify, err
		}
		p.updated = true
		return "", nil
	})
}

func (n *none) Check(ctx context.Context) error {
	if n.o.VersionPath == "" {
		return nil
	}
	return n.check(ctx, "", 0, func(ctx context.Context, ep endpoint) error {
		_, err := n.readVersion(ctx, n.hc, ep)
		return err
	})
}
