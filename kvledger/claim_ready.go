package kvledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvlease"
)

// ClaimIfReady is Claim for a record that is ready (see Judge): pending,
// RunAt not after now, every need completed. It returns the record as
// claimed, with Attempts counting this claim. Beyond Claim's checks it
// returns ErrNotReady for a pending record that may not start yet; a
// claimed record whose claim ended (judged as by Claim: the lease it
// names on the server, else LeaseUntil) is taken over as by Claim. With
// a LeaseTaker the claim holds a lease, as Claim's does. Needs are read from the store (one read
// each).
func (l *Ledger) ClaimIfReady(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, lease time.Duration, now time.Time) (TaskState, error) {
	if err := checkClaimArgs(owner, lease); err != nil {
		return TaskState{}, err
	}
	h := l.hold(owner, lease)
	defer h.end(ctx)
	for {
		cur, err := l.load(ctx, key)
		if err != nil {
			return TaskState{}, err
		}
		live, detail, err := l.claimLive(ctx, cur, now)
		if err != nil {
			return TaskState{}, err
		}
		state := LeaseStateEnded
		if live {
			state = LeaseStateLive
		}
		ev, needs, err := l.claimEvent(ctx, cur, state, now)
		if errors.Is(err, ErrLeaseActive) {
			err = fmt.Errorf("%w: %s", ErrLeaseActive, detail)
		}
		if err != nil {
			return TaskState{}, err
		}
		leaseKey, err := h.key(ctx)
		if err != nil {
			return TaskState{}, err
		}
		rec, ok, err := l.take(ctx, actor, cur, needs, owner, leaseKey, now.Add(lease), now, ev, true)
		if err == nil && ok {
			h.keep(ctx, key, rec.Fence)
		}
		if err != nil || ok {
			return rec, err
		}
	}
}

// ClaimLeased is the runtime's claim: it claims key for owner while the
// caller holds lease, a live kvlease lease of the claimant (the runtime
// holds one per worker and names it in every claim it makes). The
// claimed record names that lease (TaskState.Lease = lease.Key()), and
// the claim lives exactly as long as the lease: the server expires a
// dead claimant's lease by its TTL, so no clock is compared with
// another process's. Between claimants the record's compare-and-swap
// decides; ClaimLeased itself takes over a claimed record whatever its
// LeaseUntil says, so the caller must only ask for a claimed record
// once the lease it names has ended (the runtime sees that through the
// lease bucket's watch). A claimed record with an empty Lease was
// written before records named their lease, or by a claimant that
// holds the per-record lease (package worker's LeaseKey); it is judged
// by that key. Claim and Takeover judge a record claimed this way by the
// same lease on the server (LeaseEnded), never by its LeaseUntil.
//
// A pending record must be ready (ErrNotReady otherwise). The record is
// written claimed with a new fence, Lease = lease.Key(), LeaseUntil =
// now + lease TTL (for operators; nothing judges it), and Attempts
// counting this claim. Every write that takes the record out of claimed
// clears Lease. A record that used the last attempt its MaxAttempts
// allows is written failed instead (ErrAttemptsExhausted; see
// claimLeasedFrom).
func (l *Ledger) ClaimLeased(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, lease *kvlease.Guard, now time.Time) (TaskState, error) {
	return l.claimLeasedFrom(ctx, actor, TaskState{Key: key}, owner, lease, 0, now) // no revision: read first
}

// claimLeasedFrom is ClaimLeased starting from seen, the record as the
// caller last saw it (from a RecordWatcher): the claim is one
// compare-and-swap on seen's revision, without reading the record first.
// The store refuses it when the record changed since, and ClaimLeased
// then goes on from a fresh read, so the outcome is the same; only the
// read is saved. seen's needs are still read from the store.
//
// maxAttempts (when positive) bounds the attempts of a record whose
// MaxAttempts is 0; a record's own MaxAttempts always bounds it. A record
// that already used its last attempt is not claimed to run again: when it
// is claimed (its claimant's lease ended mid-attempt, so that attempt
// counted) it is written failed in the same compare-and-swap that would
// have taken it over, with a new fence (the dead claimant is fenced),
// Owner set to owner, LastError saying which attempt was lost, and its
// dependents blocked; the failed record comes back with
// ErrAttemptsExhausted. A task therefore never runs more than its
// maximum number of attempts.
func (l *Ledger) claimLeasedFrom(ctx context.Context, actor Actor, seen TaskState, owner OwnerID, lease *kvlease.Guard, maxAttempts int, now time.Time) (TaskState, error) {
	if owner == "" {
		return TaskState{}, ErrEmptyOwner
	}
	if lease == nil {
		return TaskState{}, ErrNoLease
	}
	judged := seen
	if !l.remember || seen.Rev == 0 {
		seen = TaskState{Key: seen.Key}
	}
	return l.claimLeased(ctx, actor, seen, judged, owner, lease, maxAttempts, now)
}

// claimLeased claims under lease, starting from cur when it carries a
// revision, else from a read of cur.Key; see claimLeasedFrom for
// maxAttempts (0: no limit beyond the record's own). judged is the
// record the caller decided on (no revision: the first one read): a
// claimed record is taken over only when it is the claim judged saw,
// whose lease the caller found ended. Any other claim (one written since
// the caller looked, by a claimant that won the race) is live as far as
// the caller knows, and comes back as ErrLeaseActive.
func (l *Ledger) claimLeased(ctx context.Context, actor Actor, cur, judged TaskState, owner OwnerID, lease *kvlease.Guard, maxAttempts int, now time.Time) (TaskState, error) {
	key := cur.Key
	for {
		if err := lease.Err(); err != nil {
			return TaskState{}, fmt.Errorf("%w: %w", ErrNoLease, err)
		}
		seen := cur.Rev != 0
		if !seen {
			var err error
			if cur, err = l.load(ctx, key); err != nil {
				return TaskState{}, err
			}
			if judged.Rev == 0 {
				judged = cur
			}
		}
		if cur.Status == StatusClaimed && (judged.Status != StatusClaimed || judged.Fence != cur.Fence) {
			return TaskState{}, fmt.Errorf("%w: %q was claimed by %q (fence %d) after the caller looked", ErrLeaseActive, string(key), string(cur.Owner), cur.Fence)
		}
		// The caller found the lease of the claim judged saw ended (the
		// check above refuses any other claim).
		ev, needs, err := l.claimEvent(ctx, cur, LeaseStateEnded, now)
		if err != nil && seen {
			cur = TaskState{Key: key} // judged on what the caller saw: decide on the stored record
			continue
		}
		if err != nil {
			return TaskState{}, err
		}
		var (
			rec TaskState
			ok  bool
		)
		if attemptsUsed(cur, maxAttempts) && !cur.CancelRequested { // take ends a cancelled claim
			rec, ok, err = l.exhaust(ctx, actor, cur, owner, AttemptLimit(cur, maxAttempts), now)
		} else {
			rec, ok, err = l.take(ctx, actor, cur, needs, owner, lease.Key(), now.Add(lease.TTL()), now, ev, true)
		}
		if err != nil || ok {
			return rec, err
		}
		cur = TaskState{Key: key} // lost the swap: read again
	}
}

// claimEvent decides by Judge whether cur may be claimed at now, lease
// being what the caller knows of the lease that holds it, and names the
// transition: a ready pending record is claimed, a claimed one taken
// over; a record that may not start yet is ErrNotReady, one a live lease
// holds ErrLeaseActive, a final one ErrNotClaimed. A pending record with
// a failed or blocked need is claimed as far as Judge goes: take
// blocks it and returns ErrNotClaimed. Needs are read from the store
// (one read each, up to the first that decides), and what was read comes
// back for take's closure check, which then reads none of them
// again.
func (l *Ledger) claimEvent(ctx context.Context, cur TaskState, lease LeaseState, now time.Time) (events.Name, needReads, error) {
	var (
		rerr error
		read needReads
	)
	need := func(n IdempotencyKey) (Status, bool) {
		if rerr != nil {
			return "", false
		}
		s, found, err := read.load(ctx, l.store, n)
		rerr = err
		return s.Status, found && err == nil
	}
	v := Judge(cur, need, lease, now)
	if rerr != nil {
		return "", nil, rerr
	}
	ev, err := claimTransition(cur, v)
	return ev, read, err
}

// claimTransition names the transition of claimEvent's verdict v on cur,
// or the error that refuses it.
func claimTransition(cur TaskState, v Verdict) (events.Name, error) {
	switch v.Kind {
	case VerdictReady, VerdictBlockedNeed:
		return ClaimedEvent, nil
	case VerdictTakeover:
		return TakenOverEvent, nil
	case VerdictWaitTime:
		return "", fmt.Errorf("%w: %q runs at %s", ErrNotReady, string(cur.Key), v.At.Format(time.RFC3339Nano))
	case VerdictWaitNeed:
		return "", fmt.Errorf("%w: %q needs %q, which is not completed", ErrNotReady, string(cur.Key), string(v.Need))
	case VerdictHeld, VerdictReadLease:
		return "", fmt.Errorf("%w: %q is held by %q under a live lease", ErrLeaseActive, string(cur.Key), string(cur.Owner))
	}
	return "", fmt.Errorf("%w: %q is %s", ErrNotClaimed, string(cur.Key), cur.Status)
}

// exhaust writes cur, which used its last allowed attempt, failed instead
// of claiming it again, with a new fence for owner, and blocks its
// dependents. The write is CompletedEvent: it ends the lost last attempt
// as its claimant's failed Complete would have (see "Events" in doc.go). ok false means the compare-and-swap lost; a write that
// landed returns ErrAttemptsExhausted (joined with any error of the
// dependency walk).
func (l *Ledger) exhaust(ctx context.Context, actor Actor, cur TaskState, owner OwnerID, limit int, now time.Time) (TaskState, bool, error) {
	fence, err := cur.nextFence()
	if err != nil {
		return TaskState{}, false, err
	}
	next := cur.clone()
	msg := fmt.Sprintf("no attempts left: %d of MaxAttempts %d used", cur.Attempts, limit)
	if cur.Status == StatusClaimed {
		msg = fmt.Sprintf("attempt %d of MaxAttempts %d lost: its claimant's lease ended before it recorded an outcome; not run again", cur.Attempts, limit)
	}
	if cur.LastError != "" {
		msg += "; previous error: " + cur.LastError
	}
	next.Status, next.Owner, next.Fence, next.LeaseUntil, next.Lease = StatusFailed, owner, fence, time.Time{}, ""
	next.LastError = TruncateError(msg)
	next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, CompletedEvent
	rec, ok, err := l.commit(ctx, cur, next, "failed, blocking its dependents", func() error { return l.blockDependents(ctx, actor, cur.Key, now) })
	if !ok {
		return rec, ok, err
	}
	return rec, true, errors.Join(fmt.Errorf("%w: %q: %s", ErrAttemptsExhausted, string(cur.Key), msg), err)
}

// ClaimNext claims the ready task (see Judge) of one of kinds (any kind
// when kinds is empty) of the highest Priority that has waited longest
// (earliest RunAt, else CreatedAt), for callers that do not run the worker runtime. It reads
// every record (one Range), so its cost grows with the ledger, and the
// lease of each claimed record that names one (see Claim); the
// runtime (package worker) keeps a ready set from the bucket's watch
// instead. It returns ErrNoReady when nothing could be claimed.
func (l *Ledger) ClaimNext(ctx context.Context, actor Actor, owner OwnerID, lease time.Duration, now time.Time, kinds ...string) (TaskState, error) {
	if err := checkClaimArgs(owner, lease); err != nil {
		return TaskState{}, err
	}
	status := make(map[IdempotencyKey]Status)
	var cands []TaskState
	err := l.store.Range(ctx, func(s TaskState) bool {
		status[s.Key] = s.Status
		if (len(kinds) == 0 || slices.Contains(kinds, s.Kind)) && (s.Status == StatusPending || s.Status == StatusClaimed) {
			cands = append(cands, s)
		}
		return true
	})
	if err != nil {
		return TaskState{}, err
	}
	need := func(k IdempotencyKey) (Status, bool) { st, ok := status[k]; return st, ok }
	cands = slices.DeleteFunc(cands, func(s TaskState) bool {
		return !Judge(s, need, l.claimLeaseState(s, now), now).Claimable()
	})
	waited := func(s TaskState) time.Time {
		if !s.RunAt.IsZero() {
			return s.RunAt
		}
		return s.CreatedAt
	}
	slices.SortFunc(cands, func(a, b TaskState) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), waited(a).Compare(waited(b)), cmp.Compare(a.Key, b.Key))
	})
	for _, c := range cands {
		rec, err := l.ClaimIfReady(ctx, actor, c.Key, owner, lease, now)
		switch {
		case err == nil:
			return rec, nil
		case errors.Is(err, ErrLeaseActive), errors.Is(err, ErrNotReady), errors.Is(err, ErrNotClaimed), errors.Is(err, ErrNoKey):
			continue // someone else took it, or it changed since the scan
		default:
			return TaskState{}, err
		}
	}
	return TaskState{}, ErrNoReady
}
