package kvledger

import (
	"context"
	"time"
)

// PendingFinish is an outcome the runtime sent (finishAsync), not yet
// confirmed. It is exported because the runtime's protocol
// (kvledger/internal/ledgerrt) names it; only package worker gets one.
// It holds what its Wait needs (one object per outcome, no closure of
// its own): the store's answer to wait for (sent), or the result when
// finishAsync settled it before returning.
type PendingFinish struct {
	l    *Ledger
	sent func(context.Context) (TaskState, bool, error) // nil: settled (rec, err)
	// rec is in place, not a pointer: every pipelined outcome settles
	// (its Wait keeps the answer for a second call), and a pointer moved
	// each answer to the heap on its own.
	rec   TaskState
	err   error
	actor Actor
	key   IdempotencyKey
	owner OwnerID
	fence FenceToken
	o     Outcome
	now   time.Time
}

// Wait returns what finish would have returned for the outcome: the
// record as stored, or ErrFenced, ErrNotClaimed, ErrNoKey for a claim
// that is no longer the caller's, or another (transient) error. ctx
// bounds it. A second call returns the first's answer; calls must not
// run concurrently.
func (p *PendingFinish) Wait(ctx context.Context) (TaskState, error) {
	if p.sent == nil {
		return p.rec, p.err
	}
	p.rec, p.err = p.wait(ctx)
	p.sent = nil // a second call's answer
	return p.rec, p.err
}

func (p *PendingFinish) wait(ctx context.Context) (TaskState, error) {
	l, key := p.l, p.key
	rec, ok, err := p.sent(ctx)
	rec, ok, err = l.swapped(key, rec, ok, err)
	if err != nil {
		if ok { // landed; the test hook aborted after it (wrote)
			return rec, err
		}
		return TaskState{}, err
	}
	if !ok {
		// Lost the swap: finish reads the record again and decides, as
		// after any lost swap (ErrFenced when another claim holds it
		// now).
		return l.finish(ctx, p.actor, key, p.owner, p.fence, p.o, p.now)
	}
	// What follows the write is finish's (commit): the claim's lease is
	// deleted, then a failure's dependents are blocked.
	return rec, l.ended(ctx, rec, p.fence, finishLabel, l.finishAfter(ctx, p.actor, key, p.o, p.now))
}

// finishAsync is finish whose compare-and-swap is sent without waiting
// for the store's answer, so the caller goes on (the runtime starts the
// next handler) while the outcome is in flight, and several outcomes are
// in flight at once, each with its own answer. The write is the one
// finish makes, fenced the same way: a compare-and-swap on the revision
// of the caller's claim, so a stale claimant's outcome is refused. When
// the swap loses (the record changed since the claim) Wait goes on as
// finish does, from a fresh read, and so returns ErrFenced when the claim
// is no longer the caller's. Once the write landed, Wait ends the claim
// as finish does (ended): the claim's lease, if this Ledger took it, is
// deleted, then a failure's dependents are blocked; the write is its
// event, as for finish.
//
// On a store without AsyncSwapper (or with an outcome finish refuses)
// finishAsync is finish itself, run before it returns.
func (l *Ledger) finishAsync(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, o Outcome, now time.Time) *PendingFinish {
	// What runs before the send (a read of the claim when it is not
	// cached, or finish itself on a store that cannot send without
	// waiting) is bounded by the store, each operation by its OpTimeout.
	done := func(rec TaskState, err error) *PendingFinish {
		return &PendingFinish{rec: rec, err: err}
	}
	// Through l.swap, not the store: a Ledger WithObserver wraps its
	// swaps to report them, and then finishes the awaited way, so that
	// every write reaches the observer.
	as, ok := l.swap.(AsyncSwapper)
	if err := checkOutcome(key, o); err != nil || !ok {
		return done(l.finish(ctx, actor, key, owner, fence, o, now))
	}
	cur, err := l.loadClaim(ctx, key, owner, fence, fenceFirst)
	if err != nil {
		return done(TaskState{}, err)
	}
	if cur.CancelRequested {
		// Ends cancelled, not as o says (endClaim): rare, so awaited.
		return done(l.finish(ctx, actor, key, owner, fence, o, now))
	}
	next := finishNext(cur, actor, o, now)
	if err := next.Validate(); err != nil {
		return done(TaskState{}, err)
	}
	return &PendingFinish{l: l, sent: as.SwapAsync(key, cur, next),
		actor: actor, key: key, owner: owner, fence: fence, o: o, now: now}
}

// pipelined reports whether finishAsync sends without waiting: the store
// is an AsyncSwapper and no observer wraps its swaps. Otherwise
// finishAsync is finish, run before it returns, and its ctx bounds it.
func (l *Ledger) pipelined() bool {
	_, ok := l.swap.(AsyncSwapper)
	return ok
}
