package kvledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// RecordDeleter is an optional Store capability: delete key's record
// only while it is still old (compared as by CompareAndSwap). It returns
// the revision of the deletion (the KVStore: its delete marker's), and
// false when the record changed. Fences stay monotonic across it: a key
// admitted again later gets fences above every earlier one.
type RecordDeleter interface {
	DeleteRecord(ctx context.Context, key IdempotencyKey, old TaskState) (rev uint64, ok bool, err error)
}

// ActionOption adjusts an operator action: Reopen, RunNow, Cancel or
// Delete.
type ActionOption func(*actionOpts)

type actionOpts struct{ rev uint64 }

// AtRevision binds an operator action to the record at revision rev (its
// TaskState.Rev as the caller read it): when the record has been written
// since, or is gone, the action returns ErrMoved and writes nothing. A
// caller that showed a record before acting (the dashboard's
// confirmation pages) passes the revision it showed, so that a task that
// moved in between (reopened and completed again, say) is never acted on.
// Zero binds nothing: the action applies to the record as it finds it.
func AtRevision(rev uint64) ActionOption { return func(o *actionOpts) { o.rev = rev } }

func actionOptsOf(opts []ActionOption) actionOpts {
	var o actionOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// load is Ledger.load for an action: under AtRevision, a record written
// since, or gone, is ErrMoved. A lost compare-and-set loads again, so
// the bound revision is checked again before any retry.
func (o actionOpts) load(ctx context.Context, l *Ledger, key IdempotencyKey) (TaskState, error) {
	cur, err := l.load(ctx, key)
	if o.rev == 0 {
		return cur, err
	}
	if errors.Is(err, ErrNoKey) {
		return TaskState{}, fmt.Errorf("%w: %q had revision %d and has no record now", ErrMoved, string(key), o.rev)
	}
	if err == nil && cur.Rev != o.rev {
		return TaskState{}, fmt.Errorf("%w: %q had revision %d and is %s at revision %d now", ErrMoved, string(key), o.rev, cur.Status, cur.Rev)
	}
	return cur, err
}

// Reopen returns a failed record to pending so it runs again: a new
// fence (one above the old, so nothing from the failed run can write),
// no owner, Attempts and Snoozes back to 0, Cancelled cleared; LastError stays as a
// record of the failure. Then every record blocked by key, directly or
// through records this call unblocks, becomes pending again, each with
// its own UnblockedEvent, unless another of its needs still blocks it
// (it then stays blocked, now naming that need). It returns
// ErrNotFailed for a record that is not failed. AtRevision binds it to
// the record as the caller read it.
func (l *Ledger) Reopen(ctx context.Context, actor Actor, key IdempotencyKey, now time.Time, opts ...ActionOption) (TaskState, error) {
	o := actionOptsOf(opts)
	for {
		cur, err := o.load(ctx, l, key)
		if err != nil {
			return TaskState{}, err
		}
		if cur.CancelRequested {
			return TaskState{}, fmt.Errorf("%w: %q is %s: its handler still runs; reopen it once it is %s",
				ErrNotFailed, string(key), PhaseCancelling, PhaseCancelled)
		}
		if cur.Status != StatusFailed {
			return TaskState{}, fmt.Errorf("%w: %q is %s", ErrNotFailed, string(key), cur.Status)
		}
		fence, err := cur.nextFence()
		if err != nil {
			return TaskState{}, err
		}
		next := cur.clone()
		next.Status, next.Owner, next.Fence, next.LeaseUntil, next.Lease = StatusPending, "", fence, time.Time{}, ""
		next.Attempts, next.Cancelled, next.RunAt, next.Result, next.Snoozes = 0, false, time.Time{}, nil, 0
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, ReopenedEvent
		after := func() error { return l.unblockDependents(ctx, actor, key, now) }
		if rec, ok, err := l.commit(ctx, cur, next, "reopened, unblocking its dependents", after); err != nil || ok {
			return rec, err
		}
	}
}

// RunNow makes a pending record that waits for its RunAt (a scheduled
// task, or one retrying after a backoff: Phase.Delayed) ready at once:
// one compare-and-set that clears RunAt, named RunNowEvent. Attempts,
// fence and LastError stay. A record that is pending and already due is
// returned as it is, with no write; any other is ErrNotDelayed. A task
// with needs still waits for them. AtRevision binds it to the record as
// the caller read it.
func (l *Ledger) RunNow(ctx context.Context, actor Actor, key IdempotencyKey, now time.Time, opts ...ActionOption) (TaskState, error) {
	o := actionOptsOf(opts)
	for {
		cur, err := o.load(ctx, l, key)
		if err != nil {
			return TaskState{}, err
		}
		switch {
		case cur.Status == StatusPending && !cur.RunAt.After(now):
			return cur, nil // due already: nothing to write
		case !cur.Phase(now).Delayed():
			return TaskState{}, fmt.Errorf("%w: %q is %s", ErrNotDelayed, string(key), cur.Phase(now))
		}
		next := cur.clone()
		next.RunAt = time.Time{}
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, RunNowEvent
		if rec, ok, err := l.commit(ctx, cur, next, "", nil); err != nil || ok {
			return rec, err
		}
	}
}

// unblockDependents walks breadth first from the reopened key through
// the dependency index and returns to pending every blocked record whose
// BlockedBy is the reopened key or a record unblocked on the way.
func (l *Ledger) unblockDependents(ctx context.Context, actor Actor, reopened IdempotencyKey, now time.Time) error {
	return l.walkDependents(ctx, reopened, func(parent, d IdempotencyKey, cleared map[IdempotencyKey]bool) (bool, error) {
		return l.unblockOne(ctx, actor, d, parent, cleared, now)
	})
}

// unblockOne returns d to pending when it is blocked by a cleared key and
// names parent in its needs; it reports whether d is now unblocked.
func (l *Ledger) unblockOne(ctx context.Context, actor Actor, d, parent IdempotencyKey, cleared map[IdempotencyKey]bool, now time.Time) (bool, error) {
	for {
		rec, found, err := l.store.Load(ctx, d)
		if err != nil || !found {
			return false, err
		}
		if rec.Status != StatusBlocked || !cleared[rec.BlockedBy] || !slices.Contains(rec.Needs, parent) {
			return false, nil
		}
		next := rec.clone()
		next.Status, next.BlockedBy = StatusPending, ""
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, UnblockedEvent
		blocker, err := l.blockingAncestor(ctx, next, nil)
		if err != nil {
			return false, err
		}
		if blocker != "" {
			if blocker == rec.BlockedBy {
				return false, nil
			}
			next.Status, next.BlockedBy, next.LastEvent = StatusBlocked, blocker, BlockedEvent
		}
		if err := next.Validate(); err != nil {
			return false, err
		}
		_, ok, err := l.write(ctx, rec, true, next)
		if err != nil {
			return false, err
		}
		if ok {
			return next.Status == StatusPending, nil
		}
	}
}

// Cancel ends a task that has not ended. A pending record ends at once:
// failed with Cancelled set and LastError = reason, its dependents
// blocked as by a failure. A claimed (running) record is not ended under
// its handler, which would let the task run again beside it once
// reopened: Cancel asks for it instead, in one compare-and-set that sets
// CancelRequested and LastError = reason and keeps the claim (owner,
// fence, lease; phase cancelling, CancelRequestedEvent). A runtime
// worker sees the request through its watch and cancels the handler's
// context (worker.ErrCancelled); the claim's next end (the owner's
// outcome, Complete or Release, whatever it says) then writes the task
// failed with Cancelled set and blocks its dependents
// (CancelledEvent), as does the claim that finds the claimant's lease
// ended (the claimant died), without running it. Cancel returns once the
// request is stored: the returned record is claimed, with
// CancelRequested; WaitFinal waits for the end. A claimant outside the
// runtime (Claim, ClaimIfReady) is not told: its Renew goes on, and it
// should read CancelRequested on the record and stop. Cancel of a cancelling
// record writes nothing and returns it. It returns ErrNotCancellable for
// a completed, failed or blocked record. AtRevision binds it to the
// record as the caller read it.
func (l *Ledger) Cancel(ctx context.Context, actor Actor, key IdempotencyKey, reason string, now time.Time, opts ...ActionOption) (TaskState, error) {
	o := actionOptsOf(opts)
	if reason == "" {
		reason = "cancelled by " + string(actor)
	}
	for {
		cur, err := o.load(ctx, l, key)
		if err != nil {
			return TaskState{}, err
		}
		next := cur.clone()
		next.LastError = TruncateError(reason)
		next.UpdatedBy, next.UpdatedAt = actor, now
		switch {
		case cur.Status == StatusClaimed && cur.CancelRequested:
			return cur, nil
		case cur.Status == StatusClaimed:
			// No commit: the claim does not end, so its lease stays.
			next.CancelRequested, next.LastEvent = true, CancelRequestedEvent
			if err := next.Validate(); err != nil {
				return TaskState{}, err
			}
			rec, ok, err := l.write(ctx, cur, true, next)
			if err != nil || ok {
				return rec, err
			}
			continue
		case cur.Status != StatusPending:
			return TaskState{}, fmt.Errorf("%w: %q is %s", ErrNotCancellable, string(key), cur.Status)
		}
		next.Status, next.Cancelled, next.LastEvent = StatusFailed, true, CancelledEvent
		after := func() error { return l.blockDependents(ctx, actor, key, now) }
		if rec, ok, err := l.commit(ctx, cur, next, cancelLabel, after); err != nil || ok {
			return rec, err
		}
	}
}

// cancelLabel names the dependency walk of a cancelled task in its error.
const cancelLabel = "cancelled, blocking its dependents"

// cancelled is the record that ends cur, a claim Cancel asked to stop,
// whoever ends it (its owner's outcome, or a claim after its lease
// ended): failed with Cancelled set, the reason kept in LastError, no
// lease, Owner and Fence those given.
func cancelled(cur TaskState, actor Actor, owner OwnerID, fence FenceToken, now time.Time) TaskState {
	next := cur.clone()
	next.Status, next.Owner, next.Fence, next.LeaseUntil, next.Lease = StatusFailed, owner, fence, time.Time{}, ""
	next.Cancelled, next.CancelRequested, next.Result = true, false, nil
	next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, CancelledEvent
	return next
}

// Delete removes a completed, failed or blocked record (ErrNotFinal for
// a pending or claimed one); the store's delete is its DeletedEvent. The key can then
// be admitted again; its fences keep rising. A record that a pending or
// claimed task needs is kept: Delete returns ErrNeeded naming those
// tasks, as a need without a record would leave them waiting for good
// (it blocks nothing and is never completed). Once they have all ended,
// or after they are cancelled, the record can be removed; a dependent
// that has ended does not hold it. (A dependent admitted while the
// removal runs can still find its need gone: the need's record does not
// change when it is admitted.) AtRevision binds Delete to the record as
// the caller read it. The store must implement RecordDeleter
// (ErrNoDelete).
func (l *Ledger) Delete(ctx context.Context, actor Actor, key IdempotencyKey, now time.Time, opts ...ActionOption) error {
	del, ok := l.store.(RecordDeleter)
	if !ok {
		return ErrNoDelete
	}
	o := actionOptsOf(opts)
	for {
		cur, err := o.load(ctx, l, key)
		if err != nil {
			return err
		}
		if cur.CancelRequested {
			return fmt.Errorf("%w: %q is %s: its handler still runs; remove it once it is %s",
				ErrNotFinal, string(key), PhaseCancelling, PhaseCancelled)
		}
		if !cur.Status.final() {
			return fmt.Errorf("%w: %q is %s", ErrNotFinal, string(key), cur.Status)
		}
		if err := l.Needed(ctx, key); err != nil {
			return err
		}
		_, ok, err := del.DeleteRecord(ctx, key, cur)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if l.remember {
			l.claims.forget(key)
		}
		return nil
	}
}

// Needed returns ErrNeeded, naming them, when pending or claimed tasks
// need key (read through the dependency index; an entry whose record no
// longer names key does not count): the refusal Delete would return. nil
// when none does. A dry run of a removal asks it.
func (l *Ledger) Needed(ctx context.Context, key IdempotencyKey) error {
	all, err := l.dependents(ctx, key)
	if err != nil {
		return err
	}
	deps, err := unended(ctx, l.store, key, all)
	if err != nil || len(deps) == 0 {
		return err
	}
	const shown = 10
	names := make([]string, 0, min(len(deps), shown)+1)
	for _, d := range deps[:min(len(deps), shown)] {
		names = append(names, fmt.Sprintf("%q", string(d)))
	}
	if len(deps) > shown {
		names = append(names, fmt.Sprintf("and %d more", len(deps)-shown))
	}
	return fmt.Errorf("%w: %q is needed by %s; remove it after they end, or cancel them first",
		ErrNeeded, string(key), strings.Join(names, ", "))
}

// unended returns those of deps (keys the dependency index lists for key)
// whose record, read from store, names key in its needs and is pending or
// claimed: the tasks that would wait for good if key's record went.
func unended(ctx context.Context, store Store, key IdempotencyKey, deps []IdempotencyKey) ([]IdempotencyKey, error) {
	var out []IdempotencyKey
	for _, d := range deps {
		rec, found, err := store.Load(ctx, d)
		if err != nil {
			return nil, err
		}
		if found && !rec.Status.final() && slices.Contains(rec.Needs, key) {
			out = append(out, d)
		}
	}
	return out, nil
}
