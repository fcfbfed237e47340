package kvledger

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// claimGuards remembers the leases this Ledger took for its claims (with a
// LeaseTaker), one per claim: by record key and the claim's fence. Each
// lease is abandoned as soon as its claim is written (kvlease.Guard.Abandon),
// so it lives exactly its TTL on the server whatever becomes of this
// process; the abandoned guard is kept for its key, revision and owner.
// Renew then renews the lease in place: the lease taker adopts the
// abandoned guard (kvlease.Manager.Adopt, when the taker can), renews it
// with one compare-and-set of the same key and a fresh server TTL, and
// abandons it again. Before, Renew took a new key each time and left the
// old one to live out its TTL, as a key every worker's lease watch is
// sent (a claim renewed every minute on a 1h lease kept about 60). Every
// call that ends a claim (endClaim: Release, Complete, an awaited
// outcome; PendingFinish.Wait: a pipelined one) deletes its lease the same
// way, right after its write (ended), and a claim that fails after taking
// its lease releases it (claimHold).
type claimGuards struct {
	mu sync.Mutex
	m  map[guardKey]heldLease
	// swept is the map's size after its last sweep: the next sweep comes
	// when it doubled, so forgetting costs O(1) per claim.
	swept int
}

type guardKey struct {
	key   IdempotencyKey
	fence FenceToken
}

// heldLease is an abandoned guard of a claim's lease and when the server
// expires it at the latest, on this process's clock: only to forget it,
// never to judge the claim.
type heldLease struct {
	g     *kvlease.Guard
	until time.Time
}

// leaseAdopter takes a lease back from a guard that held it (a
// *kvlease.Manager is one); a LeaseTaker without it renews by taking a
// new lease.
type leaseAdopter interface {
	Adopt(ctx context.Context, entry *kvlease.Guard, key string, rev uint64) (*kvlease.Guard, error)
}

// file abandons g, the lease of the claim of key at fence just written,
// and remembers it.
func (c *claimGuards) file(key IdempotencyKey, fence FenceToken, g *kvlease.Guard) {
	if g == nil {
		return
	}
	if err := g.Abandon(); err != nil {
		return // it ended already: nothing to renew in place
	}
	now := clock.Real().Now() // real time, as the lease's TTL on the server
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[guardKey]heldLease)
	}
	c.m[guardKey{key, fence}] = heldLease{g: g, until: now.Add(g.TTL() + kvlease.Margin(g.TTL()))}
	if len(c.m) >= 2*max(c.swept, 64) {
		for k, h := range c.m {
			if now.After(h.until) {
				delete(c.m, k)
			}
		}
		c.swept = len(c.m)
	}
}

// get returns the abandoned guard of the claim of key at fence, nil when
// none is remembered.
func (c *claimGuards) get(key IdempotencyKey, fence FenceToken) *kvlease.Guard {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[guardKey{key, fence}].g
}

// take forgets and returns the abandoned guard of the claim of key at
// fence, nil when none is remembered.
func (c *claimGuards) take(key IdempotencyKey, fence FenceToken) *kvlease.Guard {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[guardKey{key, fence}]
	if !ok {
		return nil
	}
	delete(c.m, guardKey{key, fence})
	return h.g
}

// adopt takes the lease of old, an abandoned guard, back as a live guard,
// when the Ledger's lease taker can: nil when it cannot or the lease is
// no longer old's.
func (l *Ledger) adopt(ctx context.Context, old *kvlease.Guard) *kvlease.Guard {
	a, ok := l.taker.(leaseAdopter)
	if old == nil || !ok {
		return nil
	}
	g, err := a.Adopt(ctx, old, old.Key(), old.Revision())
	if err != nil {
		return nil
	}
	return g
}

// renewInPlace renews the lease of the claim of key at fence, leaseKey,
// for ttl, when this Ledger took it with that TTL and can adopt it: it
// reports whether it did. An error is a renewal whose outcome is not
// known (the lease is left as it was); a lease found lost is not renewed
// in place, without error.
func (l *Ledger) renewInPlace(ctx context.Context, key IdempotencyKey, fence FenceToken, leaseKey string, ttl time.Duration) (bool, error) {
	old := l.guards.get(key, fence)
	if old == nil || old.Key() != leaseKey || old.TTL() != ttl {
		return false, nil // Renew names a new lease, then drops old (dropHeld)
	}
	g := l.adopt(ctx, old)
	if g == nil {
		l.guards.take(key, fence) // gone, or not to be taken back
		return false, nil
	}
	if g.Revision() == old.Revision() { // else Adopt renewed it already
		if err := g.Renew(ctx); err != nil {
			if errors.Is(err, kvlease.ErrLost) {
				return false, nil
			}
			l.guards.file(key, fence, g)
			return false, err
		}
	}
	l.guards.file(key, fence, g)
	return true, nil
}

// dropHeld deletes the lease of the claim of key at fence, if this Ledger
// took it: the claim ended (released, completed, replaced by a new lease,
// or found fenced). Without a lease taker no guard is ever filed (only
// holdLease and adopt make one, each through the taker), so every outcome
// of such a Ledger (the runtime's, in tasks) returns at once instead of
// taking the Ledger-wide guards' mutex.
func (l *Ledger) dropHeld(ctx context.Context, key IdempotencyKey, fence FenceToken) {
	if l.taker == nil {
		return
	}
	l.releaseHeld(ctx, l.guards.take(key, fence))
}

// releaseHeld deletes the lease of old, an abandoned guard, best effort:
// a lease it cannot take back lives out its TTL.
func (l *Ledger) releaseHeld(ctx context.Context, old *kvlease.Guard) {
	if old == nil {
		return
	}
	actx, cancel := l.cleanupCtx(ctx)
	defer cancel()
	l.dropLease(ctx, l.adopt(actx, old))
}

// dropLease releases g, a live guard of a claim's lease that no claim
// names (any more), so it does not live out its TTL as a key every lease
// watch is sent. A release that fails leaves the lease to the server's
// expiry.
func (l *Ledger) dropLease(ctx context.Context, g *kvlease.Guard) {
	if g == nil {
		return
	}
	rctx, cancel := l.cleanupCtx(ctx)
	defer cancel()
	if err := g.Release(rctx); err != nil {
		_ = g.Abandon() // stop it; the server expires it
	}
}

// cleanupCtx is the context of one operation of a lease cleanup, which a
// call runs after its write or on its way out, also when the caller's ctx
// has ended (the write it cleans up after stands): kvx.Detached, bounded
// by the lease taker's bound on one operation (kvlease.Manager.OpTimeout),
// else the store's (KVStore.OpTimeout), else kvx.DefaultOpTimeout.
func (l *Ledger) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return kvx.Detached(ctx, opBound(l.taker, l.store))
}
