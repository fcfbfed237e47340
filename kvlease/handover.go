package kvlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Handing a lease straight to a waiter.
//
// A layer that queues waiters as leases of their own (kvlock's fair mode:
// one queue entry per waiter) can pass a held lease to the first in line
// without a release and a fresh acquisition. HandOver rewrites the lease
// key with the waiter's entry value (which names its owner by the hash of
// a secret only the waiter has), in one compare-and-set on the holder's
// revision with the entry's TTL. The waiter learns from its watch that
// the key now carries its entry's value and takes it over with Adopt,
// without a write of its own.
//
// Mutual exclusion still rests on the compare-and-set of the lease key:
// the write lands only while the key is at the holder's revision, and the
// value it writes names exactly one owner. The fence is the revision of
// that write, above every earlier one.
//
// The waiter's validity window starts from the send time of its entry's
// first write: the holder saw the entry before it wrote, so that write was
// stored before the hand-over, and the server starts the new TTL after
// it. (A later renewal of the entry is no bound: the holder may have seen
// an earlier revision.) When less than half of that window is left, Adopt
// renews once, from the waiter's own send time.
//
// An adopted lease has its entry's owner hash (the stored value names it),
// so anything derived from the owner hash alone, such as a write id the
// server deduplicates, is shared by the entry and the lease: such ids must
// also name the key.
//
// The hand-over is not conditional on the entry: an atomic batch that
// also deleted it would be, but on a single-replica file-store stream the
// server stages every batch in a store of its own and syncs it, far
// dearer than a publish (BENCHMARKS.md). So a waiter that
// leaves the queue (or dies) just as a holder hands it the lock receives
// it anyway: a layer that lets waiters leave watches for that and passes
// the lock on (kvlock does), and a dead waiter's lock is freed by its TTL,
// as a crashed holder's is.

// HandOver ends g as Release does, but instead of deleting the lease it
// rewrites it with value, the lease value of a waiter's queue entry of
// this manager's kind, and that value's TTL, on condition that the key is
// still at g's revision. handed reports whether it landed; when it did
// not (a value that is not a lease value, or a refused write), the lease
// is released with the usual conditional delete instead, and an error
// matching ErrLost means it had already been lost. It is idempotent with
// Release: whichever comes first decides.
func (g *Guard) HandOver(ctx context.Context, value []byte) (handed bool, err error) {
	if g == nil {
		return false, nil
	}
	ttl, ok := valueTTL(value)
	owner, ook := ownerOf(value)
	if !ok || !ook || ValidateTTL(ttl) != nil {
		return false, g.Release(ctx) // not a lease value: nobody to hand to
	}
	start := g.m.clock()
	err = g.releaseWait(ctx, &successor{value: value, ttl: ttl, owner: owner})
	g.m.observe(ctx, Event{Op: OpRelease, Guard: g, Duration: since(start), Err: err})
	g.mu.Lock()
	handed = g.handed
	g.mu.Unlock()
	return handed, err
}

// successor is the waiter a lease is handed to.
type successor struct {
	value []byte
	ttl   time.Duration
	owner string
}

// handOver sends the hand-over. It reports handed, or an error that
// settles the release; (false, nil) asks the caller to delete instead.
func (g *Guard) handOver(wait context.Context, to *successor) (bool, error) {
	g.opMu.Lock()
	defer g.opMu.Unlock()
	g.mu.Lock()
	rev := g.rev
	g.mu.Unlock()
	ctx, cancel := g.finalCtx(wait)
	defer cancel()
	// The write carries an id (Nats-Msg-Id): while its outcome is
	// unknown (a timeout across a leader change, a copy still being
	// replicated), the same write is sent again under the same id, paced
	// and bounded by the cleanup context. A replicated stream answers a
	// copy it already stored as a duplicate and drops a late first copy;
	// a single server answers a stored one as a conflict, which the read
	// below settles. A read alone cannot tell a write still in flight from
	// one that was lost, and the delete that followed such a read could
	// find the key handed over after all and report the lease lost.
	id := nuid.Next()
	_, err := g.m.b.UpdateAs(ctx, g.key, to.value, rev, serverTTL(to.ttl), id, nil)
	if kvx.OutcomeUnknown(err) {
		rctx, rcancel := g.m.cleanupCtx()
		l := settlePauses.Start(rctx)
		l.Next() // the send above was the first try
		for kvx.OutcomeUnknown(err) && l.Next() {
			_, err = g.m.b.UpdateAs(rctx, g.key, to.value, rev, serverTTL(to.ttl), id, nil)
		}
		rcancel()
	}
	if err != nil {
		// A refusal, or an unknown outcome: the conditional delete that
		// follows settles both (it reads the key back when it must).
		// Only a landed hand-over shows the successor's owner.
		rctx, rcancel := g.m.cleanupCtx()
		e, rerr := g.m.b.Get(rctx, g.key)
		rcancel()
		if rerr != nil || !ownedBy(e.Value, to.owner) {
			return false, nil
		}
	}
	g.mu.Lock()
	g.handed = true
	g.mu.Unlock()
	g.m.stats.handedOver.Add(1)
	return true, nil
}

// mapRenewErr says what a refused renewal of a handed-over lease means.
func mapRenewErr(err error) error {
	if kvx.IsConflict(err) {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return err
}

// ownerOf returns the owner hash stored in a lease value.
func ownerOf(value []byte) (string, bool) {
	if _, owner, ok := valueTail(value); ok {
		return string(owner), true
	}
	h, err := decodeValue(value)
	if err != nil {
		return "", false
	}
	return h.OwnerHash, true
}

// HandedTo reports whether value, a lease key's value, carries entry's
// owner: a holder handed the lease to entry's owner with HandOver.
func HandedTo(value []byte, entry *Guard) bool {
	return entry != nil && ownedBy(value, entry.owner)
}

// Owns reports whether h, a lease's holder as read (HolderOfKey), carries
// g's owner hash: the lease was handed to g's owner.
func (g *Guard) Owns(h Holder) bool {
	return g != nil && h.OwnerHash == g.owner
}

// Adopt takes over key, which a holder handed to entry's owner with
// HandOver: key's value at revision rev is entry's value. The new guard
// has entry's secret, TTL and value, fence rev, and a validity window
// from the send time of entry's first write (see above); when less than
// half of it is left, Adopt renews it once first. It is detached like one
// from AcquireKeyDetached, with ctx's values, and does not renew until
// StartRenewing. entry is left as it is: the caller releases it once its
// place in line is no longer needed.
func (m *Manager) Adopt(ctx context.Context, entry *Guard, key string, rev uint64) (*Guard, error) {
	if entry == nil || entry.m != m {
		return nil, ErrForeignGuard
	}
	if err := m.checkRawKey(key); err != nil {
		return nil, err
	}
	if err := m.begin(); err != nil {
		return nil, err
	}
	defer m.acquiring.Done()
	entry.mu.Lock()
	born, cause := entry.born, entry.cause
	entry.mu.Unlock()
	if errors.Is(cause, ErrClosed) {
		return nil, ErrClosed
	}
	cur, sent := rev, born
	if born.Add(entry.ttl-entry.margin).Sub(m.now()) < (entry.ttl-entry.margin)/2 {
		// Renew first, from our own send time: the key is ours at rev.
		octx, cancel := m.opCtx(ctx)
		sent = m.now()
		nrev, err := m.b.Update(octx, key, entry.value, rev, entry.sttl)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("kvlease: adopt %q: %w", key, closedErr(mapRenewErr(err)))
		}
		cur = nrev
	}
	m.reserve() // the lease is ours already: refusing it would orphan it until its TTL
	life := context.WithoutCancel(ctx)
	g := m.newGuard(life, "", key, rev, sent, entry.ttl, entry.secret, entry.owner, entry.value)
	g.rev = cur
	if !g.start(life) {
		g.abort()
		m.unadmit()
		return nil, ErrClosed
	}
	m.stats.acquired.Add(1)
	return g, nil
}
