package kvlease

import (
	"context"
)

// SyncLatest is SyncTo the bucket's last revision as the stream leader
// reports it now: the view then holds every change acknowledged before
// the call. It costs one stream-info request; for an inspection (who
// holds what now), not for a hot path.
func (v *View) SyncLatest(ctx context.Context) error {
	octx, cancel := v.m.opCtx(ctx)
	rev, err := v.m.b.LastRevision(octx)
	cancel()
	if err != nil {
		return v.err("sync latest", err)
	}
	return v.SyncTo(ctx, rev)
}
