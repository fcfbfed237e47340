package kvlease

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// ownAttempts bounds the writes casOwn makes for one operation.
const ownAttempts = 4

// markerKeep is how long the delete marker of a released or force-released
// lease is kept. Re-acquiring the key within it takes one publish (the
// marker's revision is the hint); after it the server expires the marker
// and the key leaves the bucket, so keys used once (per task, per fair
// queue waiter) do not leave a marker behind forever.
const markerKeep = time.Minute

// casOwn runs one of the guard's owner-only compare-and-sets (write, at
// revision rev: a renewal or a guarded write) with opMu held, and tells a
// lost race from a spurious conflict. A conflict normally means the lease changed hands, but the
// chaos soak on an R3 bucket (RELIABILITY.md) saw two other things under
// stream-leader changes: a CAS refused although the leader then read the
// key at exactly the expected revision with our value, and a write stored
// at another revision than the one recorded. Every acquisition and restore
// writes a fresh owner hash, so finding ours at the server proves the
// lease is still ours: casOwn adopts the stored revision and writes again,
// backing off briefly when the revision was the one it expected (the
// server's view has not settled yet). Anything else (another owner, no
// value, a failed read) leaves the conflict to mean loss. Its ceiling is
// ownAttempts writes within ctx. A release does not come here: its delete
// has more outcomes to tell apart, and settleDeleteAt retries it.
func (g *Guard) casOwn(ctx context.Context, rev uint64, write func(ctx context.Context, rev uint64) (uint64, error)) (uint64, uint64, error) {
	out, rev, _, err := g.m.casOwned(ctx, g.key, g.owner, rev, write, g.adopt)
	return out, rev, err
}

// adopt records stored as the guard's revision after a conflict on a lease
// that still carries its owner hash.
func (g *Guard) adopt(stored uint64, attempt int) {
	g.mu.Lock()
	g.rev = stored
	g.mu.Unlock()
	g.m.log.Warn("kvlease: conflict on a lease that is still ours; writing again",
		"key", g.key, "stored", stored, "attempt", attempt+1)
}

// casOwned is the loop behind casOwn, for any write whose precondition is
// that key still carries owner (a guard's own writes; Restore, whose
// precondition is the token's owner): write at rev, and after a conflict
// read key from the stream leader. While the value still carries owner
// the refusal was spurious: write again at the stored revision (pausing
// on kvx.SpuriousConflict when it is the revision just tried), at most
// ownAttempts writes,
// telling adopt each revision taken up; when the last of them is refused
// too and the key still carries owner, the error is kvx.ErrUnsettled (an
// unknown outcome), not a conflict. It returns the last write's result,
// the revision it was made at, and what the read after its last conflict
// found (zero when there was none or it failed), for a caller that needs
// to tell more cases apart.
func (m *Manager) casOwned(ctx context.Context, key, owner string, rev uint64,
	write func(ctx context.Context, rev uint64) (uint64, error), adopt func(stored uint64, attempt int)) (uint64, uint64, kvx.Entry, error) {
	var (
		out  uint64
		err  error
		seen kvx.Entry
	)
	p := kvx.SpuriousConflict
	p.Tries = ownAttempts // pauses of 10, 20 and 40 ms at most
	for l := p.Start(ctx); l.Next(); {
		if l.Try() > 0 {
			// Another write follows the refusal at the stored revision.
			m.stats.reclaimed.Add(1)
			adopt(rev, l.Try()-1)
		}
		out, err = write(ctx, rev)
		if !kvx.IsConflict(err) {
			break
		}
		var ok bool
		if seen, ok = m.reread(key); !ok || !ownedBy(seen.Value, owner) {
			break
		}
		if l.Last() {
			// Refused every time while the key kept carrying owner: the
			// answers are not the cluster's (or it has not settled), so
			// this is an unknown outcome, never loss.
			return out, rev, seen, fmt.Errorf("%w: %q still carries its owner after %d refused writes (last: %v)",
				kvx.ErrUnsettled, key, ownAttempts, err)
		}
		if seen.Revision != rev {
			l.NoPause() // the stored revision is news: write there at once
		}
		rev = seen.Revision // when ctx ends during the pause: the last result
	}
	return out, rev, seen, err
}

// reread reads key from the stream leader after an ambiguous write.
func (m *Manager) reread(key string) (kvx.Entry, bool) {
	ctx, cancel := m.cleanupCtx()
	defer cancel()
	e, err := m.b.Get(ctx, key)
	return e, err == nil
}
