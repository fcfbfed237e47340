package kvlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/retry"
)

// staleWindow and staleRefusals: a refused delete must keep finding the
// key moved on (another holder's value, an expiry or another writer's
// marker, after the guard's revision) this many times in a row and for
// this long before a release on a replicated bucket reports ErrLost. A
// view that moved on comes from a server that applied the writes after
// ours, and any server that applied our delete answers its resend as a
// duplicate; so the resend is refused wrongly only when a deposed leader
// whose state predates our revision answers it first, which repeated
// resends make unlikely without holding a genuine loss for long.
const (
	staleWindow   = 250 * time.Millisecond
	staleRefusals = 3
)

// settlePauses is the retry policy of a release's settling loops:
// settleDeleteAt's, and handOver's resend of a hand-over whose outcome is
// unknown (handover.go), each under the manager's shared cleanup context.
// kvx.SpuriousConflict's 10 ms, doubling up to 160 ms, with no Tries of
// its own: its ctx (the manager's cleanup context, at most OpTimeout) is
// its ceiling.
var settlePauses = retry.Policy{Pause: kvx.SpuriousConflict.Pause, MaxPause: 160 * time.Millisecond}

// releaseID is the Nats-Msg-Id of this guard's release delete: the same for
// every attempt, so the stored marker and a duplicate acknowledgment both
// identify it. The owner hash is fresh for every acquisition and restore.
//
// Only a replicated bucket needs it: there a deposed leader's refusal can
// arrive first and the id lets a resend find the delete that landed. A
// single replica's answer is authoritative, so its deletes carry no id
// and cost the server no de-duplication entry. The key is part of the id
// because one owner hash can hold two keys in turn: a fair-mode waiter's
// queue entry and then the lock handed over to it.
func (g *Guard) releaseID() string {
	if !g.m.b.Replicated() {
		return ""
	}
	return g.owner + ".release." + g.key
}

// settleDeleteAt decides a release whose conditional delete at rev was
// refused or unanswered (first is that error). It is the one loop in
// which a release's delete retries (a hand-over's resend is handOver's):
// it reads the key from the stream leader and
// sends the same delete again until an outcome is proven, for as long as
// ctx allows. deleteOwn bounds it by the manager's shared cleanup
// context, which ends at most Config.OpTimeout (and at least half of it)
// after the delete, so the delete and its settling take at most
// 2 × OpTimeout (bounds.go); between rounds it pauses 10 ms, doubling up
// to 160 ms (settlePauses, on the retry primitive internal/retry).
//
// A refusal is not proof of loss while the key still carries this
// guard's owner hash, for the reasons casOwn gives; a renewal whose answer
// was lost leaves the same trace. The guard adopts the stored revision
// and deletes again there.
//
// On a replicated bucket a refusal is not proof of loss either when the
// key has moved on: right after a partition heals, a deposed stream
// leader that still believes it leads refuses the delete at once from its
// stale state while the real leader stores it, and the refusal can be the
// first answer; only an acceptance needs a quorum. Leader reads can come
// from that node too. So after the read:
//   - the last message carries our release id: the delete landed;
//   - a view older than rev (a stale replica: no current view is below
//     an acknowledged revision): the same delete is sent again; it lands
//     at most once, and a landed one is answered with its original
//     acknowledgment (the leader checks the id before the revision);
//   - moved on after rev (another holder's value, an expiry marker,
//     another writer's delete marker): our delete may have landed first
//     and the key been taken since, so the same resend decides; refused
//     staleRefusals times in a row over staleWindow, it is loss.
//
// On a single replica the only server's refusal is authoritative: a key
// that is not ours after deletes that were all refused is loss. That
// server checks the revision before the id, so once a delete went
// unanswered a key that moved on cannot be attributed: that outcome stays
// unknown. When ctx ends first the outcome is unknown too. An unknown
// outcome never matches ErrLost.
func (g *Guard) settleDeleteAt(ctx context.Context, rev uint64, first error) (uint64, error) {
	replicated := g.m.b.Replicated()
	id := g.releaseID()
	err := first
	unanswered := kvx.OutcomeUnknown(first) // a delete of ours may have landed unseen
	var movedSince time.Time                // when the key was first seen moved on, with the resend refused
	refusals := 0
	for l := settlePauses.Start(ctx); l.Next(); {
		attempt := l.Try()
		e, rerr := g.m.b.Last(ctx, g.key)
		moved := false
		switch {
		case rerr == nil && id != "" && e.MsgID == id:
			if kvx.IsConflict(first) {
				g.m.stats.reclaimed.Add(1)
				g.m.log.Warn("kvlease: release refused, but its delete had landed", "key", g.key, "rev", rev, "marker", e.Revision)
			}
			return e.Revision, nil
		case rerr != nil && !errors.Is(rerr, kvx.ErrNotFound):
			err = rerr // a failed read proves nothing: read again
			movedSince, refusals = time.Time{}, 0
			continue
		case rerr == nil && e.Live() && ownedBy(e.Value, g.owner):
			// Ours at another revision: a renewal whose answer was lost
			// (later), or a revision this guard recorded wrongly under
			// leader changes (either side). Adopt it. A stale view of
			// the value before our last renewal looks the same; the
			// delete there is refused by the real leader and the next
			// read, if the leader answers it, adopts the stored one.
			if e.Revision != rev {
				rev = e.Revision
				g.adopt(rev, attempt)
			}
		case !replicated && !unanswered:
			return 0, fmt.Errorf("%w: %q was no longer at revision %d when released", ErrLost, g.key, rev)
		case rerr == nil && e.Revision > rev:
			moved = true
			if !replicated {
				return 0, fmt.Errorf("outcome unknown: the delete at revision %d went unanswered and %q has moved on (%s at revision %d): %w", rev, g.key, e.Op, e.Revision, err)
			}
		}
		marker, werr := g.m.b.DeleteAs(ctx, g.key, rev, markerKeep, id)
		if werr == nil {
			if kvx.IsConflict(first) {
				g.m.stats.reclaimed.Add(1)
			}
			return marker, nil
		}
		err = werr
		unanswered = unanswered || kvx.OutcomeUnknown(werr)
		switch {
		case !moved || !kvx.IsConflict(werr):
			movedSince, refusals = time.Time{}, 0
			continue
		case movedSince.IsZero():
			movedSince = g.m.now()
		}
		if refusals++; refusals >= staleRefusals && g.m.now().Sub(movedSince) >= staleWindow {
			return 0, fmt.Errorf("%w: %q moved on (%s at revision %d) before the release at revision %d", ErrLost, g.key, e.Op, e.Revision, rev)
		}
	}
	return 0, fmt.Errorf("outcome unknown: the delete at revision %d was refused or unanswered and neither it nor a proven loss was found: %w", rev, err)
}
