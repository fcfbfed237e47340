package kvledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvlease"
)

// Claim gives owner the record of key for lease, from now, and returns
// the new fence token (one above the record's previous token). With a
// LeaseTaker (WithLeases) the claim holds a fresh lease with TTL lease
// (1s to 24h, else ErrInvalidLease), named in the record, which the
// server expires unless Renew replaces it; LeaseUntil is then for
// operators. Without one, LeaseUntil = now + lease is the claim's end.
//
// A record is claimable when it is pending, or claimed by a claim that
// ended: a claim that names a lease (the runtime's, TaskState.Lease)
// ended when the lease bucket's stream leader no longer holds that lease
// (LeaseEnded; the Ledger needs WithLeases to read it, and without it
// never takes such a claim), whatever its LeaseUntil says; any other
// claim (Claim's own) ended when its LeaseUntil is at or before now. The
// checks run in this order, the first failing one wins:
//
//  1. ErrEmptyOwner: owner is empty.
//  2. ErrInvalidLease: lease <= 0 or above MaxLease. Neither check
//     touches the store.
//  3. ErrNoKey: the key has no record.
//  4. ErrLeaseActive: the claim has not ended, whoever holds it (an
//     owner extends its own lease with Renew, not Claim); also a failed
//     read of the lease it names, as that error.
//  5. ErrNotClaimed: the record is completed, failed or blocked.
//  6. ErrNotClaimed: a key in the record's transitive needs is failed or
//     blocked. Claim then writes the record blocked, naming the nearest
//     such ancestor, before returning.
//  7. the Validate error of the record it would write.
//
// A lost compare-and-swap reloads and runs the checks again.
func (l *Ledger) Claim(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, lease time.Duration, now time.Time) (FenceToken, error) {
	return l.claim(ctx, actor, key, owner, lease, now, ClaimedEvent, func(cur TaskState) error {
		live, detail, err := l.claimLive(ctx, cur, now)
		if err != nil {
			return err
		}
		if live {
			return fmt.Errorf("%w: %s", ErrLeaseActive, detail)
		}
		if cur.Status != StatusPending && cur.Status != StatusClaimed {
			return fmt.Errorf("%w: %q is %s", ErrNotClaimed, string(key), cur.Status)
		}
		return nil
	})
}

// Takeover gives owner a claimed record whose claim ended (judged as in
// Claim: by the lease it names on the server, else by LeaseUntil at or
// before now), with a new fence token that fences the previous owner
// out. The order of checks:
//
//  1. ErrEmptyOwner, 2. ErrInvalidLease (no store access),
//  3. ErrNoKey,
//  4. ErrNotClaimed: the record is pending (use Claim), completed, failed
//     or blocked,
//  5. ErrNotStale: the claim has not ended (or the read of the lease it
//     names failed: that error),
//  6. ErrNotClaimed: a key in the transitive needs is failed or blocked;
//     the record is written blocked first, as in Claim,
//  7. the Validate error of the record it would write.
func (l *Ledger) Takeover(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, lease time.Duration, now time.Time) (FenceToken, error) {
	return l.claim(ctx, actor, key, owner, lease, now, TakenOverEvent, func(cur TaskState) error {
		if cur.Status != StatusClaimed {
			return fmt.Errorf("%w: %q is %s", ErrNotClaimed, string(key), cur.Status)
		}
		live, detail, err := l.claimLive(ctx, cur, now)
		if err != nil {
			return err
		}
		if live {
			return fmt.Errorf("%w: %s", ErrNotStale, detail)
		}
		return nil
	})
}

// claim is Claim and Takeover: the checks that touch no store, then, per
// compare-and-swap attempt, a fresh load, the caller's own checks
// (check) and take.
func (l *Ledger) claim(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, lease time.Duration, now time.Time, ev events.Name, check func(TaskState) error) (FenceToken, error) {
	if err := checkClaimArgs(owner, lease); err != nil {
		return 0, err
	}
	h := l.hold(owner, lease)
	defer h.end(ctx)
	for {
		cur, err := l.load(ctx, key)
		if err != nil {
			return 0, err
		}
		if err := check(cur); err != nil {
			return 0, err
		}
		leaseKey, err := h.key(ctx)
		if err != nil {
			return 0, err
		}
		rec, ok, err := l.take(ctx, actor, cur, nil, owner, leaseKey, now.Add(lease), now, ev, false)
		if err != nil {
			return 0, err
		}
		if ok {
			h.keep(ctx, key, rec.Fence)
			return rec.Fence, nil
		}
	}
}

// take is the write of every claim: Claim's and Takeover's, ClaimIfReady's
// and the runtime's (claimLeased). It first blocks cur when a key in its
// transitive needs is failed or blocked (ErrNotClaimed; needs is what
// the caller read of them already, nil for nothing), then writes cur
// claimed by owner with a new fence, naming leaseKey, until leaseUntil,
// with Attempts counting this claim when attempt is set (the runtime's
// claims and ClaimIfReady's; Claim and Takeover count none). ok false
// means the compare-and-swap lost.
//
// A claimed record that Cancel asked to stop (CancelRequested), whose
// claim ended, is not claimed: its claimant died or lost its lease before
// it recorded the outcome, so take ends it cancelled instead
// (endCancelled), runs nothing and counts no attempt.
func (l *Ledger) take(ctx context.Context, actor Actor, cur TaskState, needs needReads, owner OwnerID, leaseKey string, leaseUntil, now time.Time, ev events.Name, attempt bool) (TaskState, bool, error) {
	if cur.Status == StatusClaimed && cur.CancelRequested {
		return l.endCancelled(ctx, actor, cur, owner, now)
	}
	if len(cur.Needs) > 0 { // a task with no needs has no ancestor: no walk, no map
		blocker, err := l.blockingAncestor(ctx, cur, needs)
		if err != nil {
			return TaskState{}, false, err
		}
		if blocker != "" {
			if err := l.blockOne(ctx, actor, cur, blocker, now); err != nil {
				return TaskState{}, false, err
			}
			return TaskState{}, false, fmt.Errorf("%w: %q needs %q, which is failed or blocked", ErrNotClaimed, string(cur.Key), string(blocker))
		}
	}
	fence, err := cur.nextFence()
	if err != nil {
		return TaskState{}, false, err
	}
	next := cur.clone()
	next.Status, next.Owner, next.Fence, next.LeaseUntil, next.Lease = StatusClaimed, owner, fence, leaseUntil, leaseKey
	if attempt {
		next.Attempts = cur.Attempts + 1
	}
	next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, ev
	if err := next.Validate(); err != nil {
		return TaskState{}, false, err
	}
	return l.write(ctx, cur, true, next)
}

// endCancelled writes cur, a claim Cancel asked to stop whose lease
// ended, cancelled, with a new fence for owner (the dead claimant is
// fenced), and blocks its dependents: the end its claimant would have
// written. ok false means the compare-and-swap lost; a write that landed
// returns the record with ErrNotClaimed (joined with any error of the
// dependency walk), as the task is final.
func (l *Ledger) endCancelled(ctx context.Context, actor Actor, cur TaskState, owner OwnerID, now time.Time) (TaskState, bool, error) {
	fence, err := cur.nextFence()
	if err != nil {
		return TaskState{}, false, err
	}
	next := cancelled(cur, actor, owner, fence, now)
	rec, ok, err := l.commit(ctx, cur, next, cancelLabel, func() error { return l.blockDependents(ctx, actor, cur.Key, now) })
	if !ok {
		return rec, ok, err
	}
	return rec, true, errors.Join(fmt.Errorf("%w: %q was cancelled while %q ran it, whose claim ended: ended cancelled, not run again",
		ErrNotClaimed, string(cur.Key), string(cur.Owner)), err)
}

// Renew moves the lease of the caller's claim to now+lease. With a
// LeaseTaker (WithLeases) the claim's lease is renewed in place when this
// Ledger took it (Claim, Takeover, ClaimIfReady, ClaimNext or an earlier
// Renew) for the same duration: one compare-and-set of the same lease key
// with a fresh TTL on the server. Otherwise (another process claimed, or
// lease differs) Renew takes a new lease for lease, names it in the
// record instead of the old one and deletes the old one if this Ledger
// took it (one it did not take expires at its TTL unless its holder
// renews it: a worker renews its one lease for as long as it runs). A claim that
// names a lease cannot be renewed without a LeaseTaker (ErrNoLease). The
// order of checks: ErrInvalidLease (no store access), ErrNoKey,
// ErrNotClaimed (the record is not claimed), ErrFenced (the fence or
// owner is not the claim's), ErrNoLease, then the Validate error. A lost
// compare-and-swap reloads: while the record is still the caller's claim,
// Renew tries again, otherwise it returns the error the fresh record
// calls for (and deletes the lease of the claim, if this Ledger took it).
func (l *Ledger) Renew(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, lease time.Duration, now time.Time) error {
	if err := checkLease(lease); err != nil {
		return err
	}
	var (
		h       *claimHold // a new lease, when the claim's is not renewed in place
		inPlace bool       // the claim's lease was renewed in place
	)
	defer func() { h.end(ctx) }()
	for {
		cur, err := l.loadClaim(ctx, key, owner, fence, statusFirst)
		if errors.Is(err, ErrNoKey) || errors.Is(err, ErrNotClaimed) || errors.Is(err, ErrFenced) {
			l.dropHeld(ctx, key, fence) // the claim is over
		}
		if err != nil {
			return err
		}
		if h == nil && !inPlace { // decided once: on the first record read
			if cur.Lease != "" && l.taker == nil {
				return fmt.Errorf("%w: %q's claim names lease %q, which only a new lease renews (WithLeases with a LeaseTaker)", ErrNoLease, string(key), cur.Lease)
			}
			if cur.Lease != "" {
				if inPlace, err = l.renewInPlace(ctx, key, fence, cur.Lease, lease); err != nil {
					return fmt.Errorf("kvledger: renewing the claim's lease %q: %w", cur.Lease, err)
				}
			}
			if !inPlace {
				h = l.hold(owner, lease)
			}
		}
		next := cur.clone()
		next.LeaseUntil = now.Add(lease)
		if h != nil {
			if next.Lease, err = h.key(ctx); err != nil {
				return err
			}
		}
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, RenewedEvent
		if err := next.Validate(); err != nil {
			return err
		}
		_, ok, err := l.write(ctx, cur, true, next)
		if err == nil && ok && h != nil {
			h.keep(ctx, key, fence) // and drops the lease the record named
		}
		if err != nil || ok {
			return err
		}
	}
}

// Release gives the caller's claim back: the record returns to pending
// with no owner and no lease, keeping its fence (the next Claim outbids
// it), its Attempts and its LastError (Attempts reads such a release as
// one with no error of its own, see ownError). The order of checks is
// Complete's, the seed ledger's: ErrNoKey, ErrFenced (the token is not
// the record's), ErrNotClaimed, then ErrFenced for another owner's name.
// A lost compare-and-swap reloads and retries while the record is still
// the caller's claim.
func (l *Ledger) Release(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, now time.Time) error {
	_, err := l.endClaim(ctx, key, owner, fence, func(cur TaskState) TaskState {
		next := cur.clone()
		next.Status, next.Owner, next.LeaseUntil, next.Lease = StatusPending, "", time.Time{}, ""
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, ReleasedEvent
		return next
	}, "", nil)
	return err
}

// load is Load with a missing key turned into ErrNoKey, for operations
// that write what they read: a store that can confirm a missing record
// (absenceConfirmer) does so before ErrNoKey is returned.
func (l *Ledger) load(ctx context.Context, key IdempotencyKey) (TaskState, error) {
	cur, found, err := l.store.Load(ctx, key)
	if err == nil && !found && l.confirm != nil {
		if err = l.confirm.confirmAbsent(ctx, key); err == nil {
			cur, found, err = l.store.Load(ctx, key)
		}
	}
	if err != nil {
		return TaskState{}, err
	}
	if !found {
		return TaskState{}, fmt.Errorf("%w: %q", ErrNoKey, string(key))
	}
	return cur, nil
}

// claimOrder is the order in which a call that presents a fence finds
// the record not claimed (ErrNotClaimed) and the caller's token not the
// record's (ErrFenced), as the seed ledger states it per call.
type claimOrder uint8

const (
	// fenceFirst: Release, Complete and the runtime's outcome. A stale
	// token is ErrFenced whatever the record's status; the record's own
	// token on a record that is not claimed is ErrNotClaimed.
	fenceFirst claimOrder = iota
	// statusFirst: Renew. A record that is not claimed is ErrNotClaimed
	// whatever the token.
	statusFirst
)

// checkClaim refuses a caller that does not hold cur's claim, in order:
// with fenceFirst, ErrFenced when fence is not cur's; then ErrNotClaimed
// when cur is not claimed; then ErrFenced when fence is not cur's, or cur
// names another owner (an owner that does not hold the claim holds no
// valid fence). Only a claimed record's owner is compared: a record that
// is not claimed has no claim to be fenced from.
func checkClaim(cur TaskState, owner OwnerID, fence FenceToken, order claimOrder) error {
	if order == fenceFirst && cur.Fence != fence {
		return staleFence(cur, owner, fence)
	}
	if cur.Status != StatusClaimed {
		return fmt.Errorf("%w: %q is %s", ErrNotClaimed, string(cur.Key), cur.Status)
	}
	if cur.Fence != fence {
		return staleFence(cur, owner, fence)
	}
	if cur.Owner != "" && cur.Owner != owner {
		return fmt.Errorf("%w: %q at fence %d is owned by %q, not by the caller %q",
			ErrFenced, string(cur.Key), cur.Fence, string(cur.Owner), string(owner))
	}
	return nil
}

func staleFence(cur TaskState, owner OwnerID, fence FenceToken) error {
	return fmt.Errorf("%w: %q is at fence %d (%s, owned by %q), caller has %d as %q",
		ErrFenced, string(cur.Key), cur.Fence, cur.Status, string(cur.Owner), fence, string(owner))
}

// MaxLease is the longest lease Claim, Renew, Takeover, ClaimIfReady and
// ClaimNext accept: kvlease's MaxTTL (24h), the bound on every other
// lease here. A claim holds a task against every other worker until its
// lease runs out; an unbounded one (a mistyped --lease 2562047h ran to
// the year 2319) keeps a crashed owner's task from ever being taken
// over. Work longer than a day renews.
const MaxLease = kvlease.MaxTTL

// checkClaimArgs is the check of a claim's arguments that touches no
// store: ErrEmptyOwner, then ErrInvalidLease.
func checkClaimArgs(owner OwnerID, lease time.Duration) error {
	if owner == "" {
		return ErrEmptyOwner
	}
	return checkLease(lease)
}

// checkLease refuses a lease outside (0, MaxLease] with ErrInvalidLease.
func checkLease(lease time.Duration) error {
	switch {
	case lease <= 0:
		return fmt.Errorf("%w: %v is not positive", ErrInvalidLease, lease)
	case lease > MaxLease:
		return fmt.Errorf("%w: %v is above MaxLease (%v); renew a longer claim", ErrInvalidLease, lease, MaxLease)
	}
	return nil
}
