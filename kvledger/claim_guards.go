package kvledger

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/natscoord/natscoord/kvlease"
)

// claimGuards holds the leases this Ledger took for its claims (with a
// LeaseTaker), one per claim: by record key and the claim's fence. Renew
// renews a claim's lease in place (kvlease.Guard.Renew: one
// compare-and-set of the same key with a fresh server TTL) instead of
// taking a new key each time and leaving the old one to live out its TTL,
// as a key every worker's lease watch is sent. A claim that fails after
// its lease was taken releases it, as do Release and Complete. A guard is not renewed by itself: the
// claim still ends when its owner stops calling Renew (the guard is lost
// a kvlease margin before the server's expiry, and deleted then). Close
// abandons the guards still held (kvlease.Guard.Abandon), so those leases
// live exactly their TTL on the server after the process exits, as a
// one-shot claim from the command line needs.
type claimGuards struct {
	mu     sync.Mutex
	m      map[guardKey]*kvlease.Guard
	closed bool
}

type guardKey struct {
	key   IdempotencyKey
	fence FenceToken
}

// get returns the guard of the claim of key at fence, if this Ledger holds
// one that has not ended.
func (c *claimGuards) get(key IdempotencyKey, fence FenceToken) *kvlease.Guard {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.m[guardKey{key, fence}]
	if g != nil && g.Err() != nil {
		return nil
	}
	return g
}

// keep files g as the lease of the claim of key at fence, releasing the
// lease it replaces. After Close it abandons g at once instead.
func (c *claimGuards) keep(key IdempotencyKey, fence FenceToken, g *kvlease.Guard) {
	if g == nil {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = g.Abandon()
		return
	}
	if c.m == nil {
		c.m = make(map[guardKey]*kvlease.Guard)
	}
	k := guardKey{key, fence}
	old := c.m[k]
	c.m[k] = g
	c.mu.Unlock()
	// The entry goes when the guard ends (lost at its TTL, released).
	g.AfterEnd(func() {
		c.mu.Lock()
		if c.m[k] == g {
			delete(c.m, k)
		}
		c.mu.Unlock()
	})
	if old != nil && old != g {
		dropLease(old)
	}
}

// drop releases the lease of the claim of key at fence, if held: the
// claim ended (released, or found fenced).
func (c *claimGuards) drop(key IdempotencyKey, fence FenceToken) {
	c.mu.Lock()
	g := c.m[guardKey{key, fence}]
	delete(c.m, guardKey{key, fence})
	c.mu.Unlock()
	if g != nil {
		dropLease(g)
	}
}

// close abandons every guard still held, leaving each lease to the
// server's expiry, and makes later claims abandon theirs at once.
func (c *claimGuards) close() {
	c.mu.Lock()
	gs := c.m
	c.m, c.closed = nil, true
	c.mu.Unlock()
	for _, g := range gs {
		_ = g.Abandon()
	}
}

// dropTimeout bounds the release of a claim's lease that no claim names.
const dropTimeout = 5 * time.Second

// dropLease releases g, a claim's lease that no claim names (any more),
// so it does not live out its TTL as a key every lease watch is sent. A
// release that fails leaves the lease to the server's expiry.
func dropLease(g *kvlease.Guard) {
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
	defer cancel()
	if err := g.Release(ctx); err != nil && !errors.Is(err, kvlease.ErrReleased) {
		_ = g.Abandon() // stop it; the server expires it
	}
}
