package kvlease

import (
	"context"
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
// revision rev) with opMu held, and tells a lost race from a spurious
// conflict. A conflict normally means the lease changed hands, but the
// chaos soak on an R3 bucket (RELIABILITY.md) saw two other things under
// stream-leader changes: a CAS refused although the leader then read the
// key at exactly the expected revision with our value, and a write stored
// at another revision than the one recorded. Every acquisition and restore
// writes a fresh owner hash, so finding ours at the server proves the
// lease is still ours: casOwn adopts the stored revision and writes again,
// backing off briefly when the revision was the one it expected (the
// server's view has not settled yet). Anything else (another owner, no
// value, a failed read) leaves the conflict to mean loss.
func (g *Guard) casOwn(ctx context.Context, rev uint64, write func(ctx context.Context, rev uint64) (uint64, error)) (uint64, uint64, error) {
	var (
		out uint64
		err error
	)
	for attempt := range ownAttempts {
		out, err = write(ctx, rev)
		if !kvx.IsConflict(err) || attempt == ownAttempts-1 {
			break
		}
		cur, ours := g.storedRevision()
		if !ours {
			break
		}
		if cur == rev && kvx.Backoff(ctx, attempt) != nil {
			return out, rev, err
		}
		rev = cur
		g.mu.Lock()
		g.rev = rev
		g.mu.Unlock()
		g.m.stats.reclaimed.Add(1)
		g.m.log.Warn("kvlease: conflict on a lease that is still ours; writing again",
			"key", g.key, "stored", cur, "attempt", attempt+1)
	}
	return out, rev, err
}

// storedRevision reads the lease key from the stream leader and reports
// its revision and whether it still carries this guard's owner hash.
func (g *Guard) storedRevision() (uint64, bool) {
	ctx, cancel := g.m.cleanupCtx()
	defer cancel()
	e, err := g.m.b.Get(ctx, g.key)
	if err != nil || !ownedBy(e.Value, g.owner) {
		return 0, false
	}
	return e.Revision, true
}
