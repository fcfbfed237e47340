package kvledger

import (
	"context"
	"time"

	"github.com/natscoord/natscoord/kvlease"
)

// claimHold is the lease bookkeeping of one call that writes a claim
// naming a fresh lease: Claim, Takeover, ClaimIfReady (and ClaimNext
// through it), and a Renew that cannot renew the claim's lease in place.
// The lease is taken once, when the call's checks first pass, and kept
// across lost compare-and-swaps; once the claim naming it is written it
// is filed (claimGuards.file, which abandons it to the server's TTL),
// replacing any lease this Ledger filed for that claim before; when the
// call ends without that write, end releases it, so a failed claim
// leaves no lease behind. Without a LeaseTaker there is no lease and
// every step is a no-op.
type claimHold struct {
	l     *Ledger
	owner OwnerID
	ttl   time.Duration
	g     *kvlease.Guard
	taken bool // g is taken (nil without a LeaseTaker)
	kept  bool // g is the written claim's
}

// hold starts the bookkeeping of a claim of owner whose lease lasts ttl.
// The caller defers end.
func (l *Ledger) hold(owner OwnerID, ttl time.Duration) *claimHold {
	return &claimHold{l: l, owner: owner, ttl: ttl}
}

// key takes the lease on the first call and returns the key the claim
// names ("" without a LeaseTaker).
func (h *claimHold) key(ctx context.Context) (string, error) {
	if !h.taken {
		g, err := h.l.holdLease(ctx, h.owner, h.ttl)
		if err != nil {
			return "", err
		}
		h.g, h.taken = g, true
	}
	return leaseKeyOf(h.g), nil
}

// keep files the lease as that of the claim of key at fence, just
// written, releasing the one this Ledger filed for that claim before (a
// Renew's claim named it until this write).
func (h *claimHold) keep(ctx context.Context, key IdempotencyKey, fence FenceToken) {
	h.kept = true
	if h.g == nil {
		return
	}
	h.l.dropHeld(ctx, key, fence)
	h.l.guards.file(key, fence, h.g)
}

// end releases the lease unless keep filed it: the claim failed, and its
// lease goes with it. A nil claimHold (none was needed) has nothing to end.
func (h *claimHold) end(ctx context.Context) {
	if h != nil && !h.kept {
		h.l.dropLease(ctx, h.g)
	}
}
