package kvledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// LeasePrefix is the prefix of the lease keys of the ledger in bucket, in
// the lease bucket: "kvledger.<bucket token>.". A claimant's lease key
// follows it with ClaimLeaseInfix (NewClaimLeaseKey); package worker's
// per-record lease key with the record key's token.
func LeasePrefix(bucket string) string { return "kvledger." + kvx.EncodeToken(bucket) + "." }

// ClaimLeaseInfix follows LeasePrefix in a claimant's lease key. A
// per-record lease key has one token after the prefix, so the two never
// meet.
const ClaimLeaseInfix = "w."

// NewClaimLeaseKey returns a fresh key for a lease that claims of owner
// on the ledger in bucket name: "kvledger.<bucket>.w.<token of owner and
// a nuid>". It is new on every call, so a lease that ended never comes
// back under the same key: a record naming an ended lease stays free for
// takeover. The runtime's workers and Claim (WithLeases) take their
// leases under such keys, and the runtime's lease watch follows them.
func NewClaimLeaseKey(bucket string, owner OwnerID) string {
	return LeasePrefix(bucket) + ClaimLeaseInfix + kvx.EncodeToken(string(owner)+"."+nuid.Next())
}

// ClaimLeaseOwner returns the owner a claimant's lease key of the ledger
// in bucket names (a key NewClaimLeaseKey made), and whether key is one.
// The key's last token encodes the owner and a nuid, which has no dot.
func ClaimLeaseOwner(bucket, key string) (OwnerID, bool) {
	s, err := keyToken(key, LeasePrefix(bucket)+ClaimLeaseInfix, "claim lease")
	if err != nil {
		return "", false
	}
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", false
	}
	return OwnerID(s[:i]), true
}

// LeaseReader reads a raw lease key from the lease bucket's stream
// leader: who holds it, and whether anyone does. A *kvlease.Manager on
// the runtime's lease bucket is one.
type LeaseReader interface {
	HolderOfKey(ctx context.Context, key string) (kvlease.Holder, bool, error)
}

// LeaseTaker takes a lease under a raw key for a claim (a
// *kvlease.Manager is one): the Ledger abandons the guard once the claim
// is written (kvlease.Guard.Abandon), so the lease lives exactly its TTL
// on the server, also after the process that took it exits. A taker that
// can also adopt an abandoned guard back (kvlease.Manager.Adopt, as a
// *kvlease.Manager does) lets Renew renew the lease in place, and Release,
// Complete and a failed Renew delete it (claim_guards.go).
type LeaseTaker interface {
	LeaseReader
	TryAcquireKeyDetached(ctx context.Context, key string, ttl time.Duration) (*kvlease.Guard, bool, error)
}

// WithLeases gives the Ledger the lease bucket that the runtime's claims
// name (package worker's Config.LeaseBucket). Claim, Takeover,
// ClaimIfReady and ClaimNext judge a claimed record that names a lease
// (TaskState.Lease) by that lease alone, read from the lease bucket's
// stream leader (LeaseEnded); without WithLeases they cannot, and refuse
// to take such a record. ClaimLease reads it for display.
//
// When r is also a LeaseTaker (a *kvlease.Manager is), the claims the
// Ledger makes hold a lease too: Claim, Takeover, ClaimIfReady and
// ClaimNext take a fresh lease (NewClaimLeaseKey) with the claim's lease
// duration as its TTL and name it in the record, and Renew renews that
// lease in place when this Ledger took it with the same duration (else it
// takes a new one, names that instead and deletes the old one it took).
// The server then expires the claim when its owner stops renewing, and
// the runtime's workers and other Ledgers judge it by that expiry, never
// by a clock: one claim protocol on a record, whichever API made the
// claim. A lease is 1s to 24h (kvlease.ValidateTTL). A claim renewed by
// another process than the one that claimed (the command line's ledger
// renew) takes a new lease, and the old one expires at its TTL unless its
// holder renews it (a worker renews its one lease for as long as it runs).
func WithLeases(r LeaseReader) Option {
	return func(l *Ledger) error {
		if r == nil {
			return fmt.Errorf("%w: nil lease reader", ErrInvalidConfig)
		}
		l.leases = r
		l.taker, _ = r.(LeaseTaker)
		return nil
	}
}

// holdLease takes a fresh lease for a claim of owner lasting ttl, when
// the Ledger has a LeaseTaker, and returns its guard (nil without one).
// claimHold is its one caller: it files the lease once the claim is
// written, or releases it when the claim fails.
func (l *Ledger) holdLease(ctx context.Context, owner OwnerID, ttl time.Duration) (*kvlease.Guard, error) {
	if l.taker == nil {
		return nil, nil
	}
	if err := kvlease.ValidateTTL(ttl); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidLease, err)
	}
	// The source is the store's own name where it has one (WithSource
	// refuses another): the runtime's prefix, package worker's New.
	key := NewClaimLeaseKey(l.source, owner)
	g, ok, err := l.taker.TryAcquireKeyDetached(ctx, key, ttl)
	if err != nil {
		return nil, fmt.Errorf("kvledger: the claim's lease: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("kvledger: the claim's lease %q is taken", key) // a fresh nuid: nobody else writes it
	}
	return g, nil
}

// leaseKeyOf is the key a claim names for g ("" without a lease).
func leaseKeyOf(g *kvlease.Guard) string {
	if g == nil {
		return ""
	}
	return g.Key()
}

// LeaseEnded reports whether lease, the lease a claimed record names,
// has ended, read from the lease bucket's stream leader; while it is held
// it also returns the holder (Holder.Expires is the server's expiry).
// It is the one test by which any takeover of such a claim decides, the
// runtime's and the Ledger's: the server expires a dead claimant's lease
// by its TTL, so no process compares its clock with another's. A read
// that fails is an error, never "ended".
func LeaseEnded(ctx context.Context, r LeaseReader, lease string) (bool, kvlease.Holder, error) {
	h, held, err := r.HolderOfKey(ctx, lease)
	if err != nil {
		return false, kvlease.Holder{}, fmt.Errorf("kvledger: reading lease %q: %w", lease, err)
	}
	return !held, h, nil
}

// ClaimLease reads the lease that rec, a claimed record, names, for a
// display of the claim's real expiry: held is false when the lease has
// ended (the claim is free for takeover). ok is false when rec names no
// lease (a claim made by Claim without a LeaseTaker, whose LeaseUntil is
// its expiry). It needs WithLeases.
func (l *Ledger) ClaimLease(ctx context.Context, rec TaskState) (h kvlease.Holder, held, ok bool, err error) {
	if rec.Status != StatusClaimed || rec.Lease == "" {
		return kvlease.Holder{}, false, false, nil
	}
	if l.leases == nil {
		return kvlease.Holder{}, false, true, fmt.Errorf("%w: %q names lease %q and this Ledger has no lease bucket (WithLeases)", ErrInvalidConfig, string(rec.Key), rec.Lease)
	}
	ended, h, err := LeaseEnded(ctx, l.leases, rec.Lease)
	return h, !ended && err == nil, true, err
}

// claimLeaseState says what can be known of the lease that holds cur
// without reading the lease bucket, for Judge: a record naming no lease
// (Claim's own claim, made without a LeaseTaker) is held until its
// LeaseUntil, judged against now, the reference claim's own protocol (its
// owner moves LeaseUntil with Renew); one naming a lease is unknown until
// read (LeaseEnded), and counts as live when this Ledger cannot read it
// (no WithLeases), whatever its LeaseUntil says: the runtime renews the
// lease, not the record.
func (l *Ledger) claimLeaseState(cur TaskState, now time.Time) LeaseState {
	switch {
	case cur.Lease == "" && cur.LeaseUntil.After(now):
		return LeaseStateLive
	case cur.Lease == "":
		return LeaseStateEnded
	case l.leases == nil:
		return LeaseStateLive
	}
	return LeaseStateUnknown
}

// claimLive decides whether cur, a record Claim or Takeover found, is a
// live claim that may not be taken: claimLeaseState, and a read of the
// lease it names on the server when that is unknown. When live, detail
// says who holds it and until when, for the error.
func (l *Ledger) claimLive(ctx context.Context, cur TaskState, now time.Time) (live bool, detail string, err error) {
	switch l.claimLeaseState(cur, now) {
	case LeaseStateEnded:
		return false, "", nil
	case LeaseStateLive:
		if cur.Lease == "" {
			return true, fmt.Sprintf("%q held by %q until %s", string(cur.Key), string(cur.Owner), cur.LeaseUntil.Format(time.RFC3339Nano)), nil
		}
		return true, fmt.Sprintf("%q is claimed by %q under lease %q, which this Ledger cannot read (no WithLeases), so it cannot confirm the claim ended",
			string(cur.Key), string(cur.Owner), cur.Lease), nil
	}
	ended, h, err := LeaseEnded(ctx, l.leases, cur.Lease)
	if err != nil || ended {
		return false, "", err
	}
	return true, fmt.Sprintf("%q held by %q under lease %q, live on the server until at least %s",
		string(cur.Key), string(cur.Owner), cur.Lease, h.Expires.Format(time.RFC3339Nano)), nil
}
