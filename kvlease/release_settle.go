package kvlease

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// settleForeignReads is how many reads in a row must show another writer's
// delete marker after the guard's revision, with the delete refused each
// time, before a release reports ErrLost for it.
const settleForeignReads = 3

// settleBackoffCap bounds the backoff between settling attempts (the
// attempt index given to kvx.Backoff: 10 ms << 4 = 160 ms).
const settleBackoffCap = 4

// releaseID is the Nats-Msg-Id of this guard's release delete: the same for
// every attempt, so the stored marker and a duplicate acknowledgment both
// identify it. The owner hash is fresh for every acquisition and restore.
func (g *Guard) releaseID() string { return g.owner + ".release" }

// settleDeleteAt decides a release whose conditional delete at rev was
// refused or unanswered (first is that error). A refusal is not proof of
// loss: right after a partition heals, a deposed stream leader that still
// believes it leads refuses the delete at once from its stale state while
// the real leader stores it, and the refusal can be the first answer. Only
// acceptance needs a quorum. So the key is read from the stream leader
// (which may, for that moment, also be the deposed one) and:
//   - the last message carries our release id: the delete landed;
//   - a live value of another owner, or an expiry marker, after rev: the
//     lease was taken or had expired before the release (ErrLost);
//   - our own value, or a view older than rev (a stale replica: no current
//     view can be below an acknowledged revision): the delete is sent
//     again with the same id, which lands at most once and which the
//     leader answers with the original acknowledgment if the first one
//     landed;
//   - another writer's delete marker after rev (a force release, or our
//     delete followed by another holder's whole tenure): the same resend
//     decides it; refused settleForeignReads times in a row, it is loss.
//
// When ctx ends first the outcome is unknown and the error says so; it
// never matches ErrLost.
func (g *Guard) settleDeleteAt(ctx context.Context, rev uint64, first error) (uint64, error) {
	id := g.releaseID()
	err := first
	foreign := 0
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if kvx.Backoff(ctx, min(attempt-1, settleBackoffCap)) != nil {
				break
			}
		}
		e, rerr := g.m.b.Last(ctx, g.key)
		switch {
		case rerr == nil && e.MsgID == id:
			if kvx.IsConflict(first) {
				g.m.stats.reclaimed.Add(1)
				g.m.log.Warn("kvlease: release refused, but its delete had landed", "key", g.key, "rev", rev, "marker", e.Revision)
			}
			return e.Revision, nil
		case rerr == nil && e.Revision > rev && e.Live() && !ownedBy(e.Value, g.owner):
			return 0, fmt.Errorf("%w: %q was taken at revision %d before the release at revision %d", ErrLost, g.key, e.Revision, rev)
		case rerr == nil && e.Revision > rev && e.Op == kvx.OpExpired:
			return 0, fmt.Errorf("%w: %q expired (revision %d) before the release at revision %d", ErrLost, g.key, e.Revision, rev)
		case rerr == nil && e.Revision > rev && e.Live():
			rev = e.Revision // a renewal of ours whose answer was lost
			foreign = 0
		case rerr == nil && e.Revision > rev:
			foreign++
		case rerr != nil && !errors.Is(rerr, kvx.ErrNotFound):
			err = rerr // a failed read proves nothing: read again
			foreign = 0
			continue
		default:
			foreign = 0 // our value at rev, or a view older than rev
		}
		marker, werr := g.m.b.DeleteAs(ctx, g.key, rev, markerKeep, id)
		if werr == nil {
			if kvx.IsConflict(first) {
				g.m.stats.reclaimed.Add(1)
			}
			return marker, nil
		}
		err = werr
		if foreign >= settleForeignReads && kvx.IsConflict(werr) {
			return 0, fmt.Errorf("%w: %q was deleted by another writer (revision %d) before the release at revision %d", ErrLost, g.key, e.Revision, rev)
		}
	}
	return 0, fmt.Errorf("outcome unknown: the delete at revision %d was refused or unanswered and neither it nor another holder could be found: %w", rev, err)
}
