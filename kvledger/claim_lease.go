package kvledger

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/kvlease"
)

// LeaseReader reads a raw lease key from the lease bucket's stream
// leader: who holds it, and whether anyone does. A *kvlease.Manager on
// the runtime's lease bucket is one.
type LeaseReader interface {
	HolderOfKey(ctx context.Context, key string) (kvlease.Holder, bool, error)
}

// WithLeases gives the Ledger the lease bucket that the runtime's claims
// name (package worker's Config.LeaseBucket). Claim, Takeover,
// ClaimIfReady and ClaimNext judge a claimed record that names a lease
// (TaskState.Lease) by that lease alone, read from the lease bucket's
// stream leader (LeaseEnded); without WithLeases they cannot, and refuse
// to take such a record. ClaimLease reads it for display.
func WithLeases(r LeaseReader) Option {
	return func(l *Ledger) error {
		if r == nil {
			return fmt.Errorf("%w: nil lease reader", ErrInvalidConfig)
		}
		l.leases = r
		return nil
	}
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
// lease (a claim made by Claim, whose LeaseUntil is its expiry). It needs
// WithLeases.
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

// claimLive decides whether cur, a record Claim or Takeover found, is a
// live claim that may not be taken. A record naming a lease is judged by
// that lease on the server (LeaseEnded), whatever its LeaseUntil says:
// the runtime renews the lease, not the record. Any other record is
// judged by LeaseUntil against now, the reference claim's own protocol
// (its owner moves LeaseUntil with Renew). When live, detail says who
// holds it and until when, for the error.
func (l *Ledger) claimLive(ctx context.Context, cur TaskState, now time.Time) (live bool, detail string, err error) {
	if cur.Lease == "" {
		if cur.LeaseUntil.After(now) {
			return true, fmt.Sprintf("%q held by %q until %s", string(cur.Key), string(cur.Owner), cur.LeaseUntil.Format(time.RFC3339Nano)), nil
		}
		return false, "", nil
	}
	if l.leases == nil {
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
