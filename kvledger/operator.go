package kvledger

import (
	"context"
	"fmt"
	"slices"
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

// Reopen returns a failed record to pending so it runs again: a new
// fence (one above the old, so nothing from the failed run can write),
// no owner, Attempts and Snoozes back to 0, Cancelled cleared; LastError stays as a
// record of the failure. Then every record blocked by key, directly or
// through records this call unblocks, becomes pending again, each with
// its own UnblockedEvent, unless another of its needs still blocks it
// (it then stays blocked, now naming that need). It returns
// ErrNotFailed for a record that is not failed.
func (l *Ledger) Reopen(ctx context.Context, actor Actor, key IdempotencyKey, now time.Time) (TaskState, error) {
	for {
		cur, err := l.load(ctx, key)
		if err != nil {
			return TaskState{}, err
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
// one compare-and-set that clears RunAt, written at rev when rev is not
// 0 (the revision the caller saw: a record that moved since is
// ErrChanged, not overwritten) and named RunNowEvent. Attempts, fence
// and LastError stay. A record that is pending and already due is
// returned as it is, with no write; any other is ErrNotDelayed. A task
// with needs still waits for them.
func (l *Ledger) RunNow(ctx context.Context, actor Actor, key IdempotencyKey, rev uint64, now time.Time) (TaskState, error) {
	for {
		cur, err := l.load(ctx, key)
		if err != nil {
			return TaskState{}, err
		}
		switch {
		case rev != 0 && cur.Rev != rev:
			return TaskState{}, fmt.Errorf("%w: %q is at revision %d, not %d", ErrChanged, string(key), cur.Rev, rev)
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
		if rev != 0 {
			return TaskState{}, fmt.Errorf("%w: %q moved from revision %d", ErrChanged, string(key), rev)
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

// Cancel ends a pending or claimed record as failed with Cancelled set
// and LastError = reason, and blocks its dependents as a failure does. A
// claimed record's owner finds its claim gone: its Complete returns
// ErrNotClaimed, and a runtime worker cancels the handler's context at
// once (it sees the write through its watch). It returns
// ErrNotCancellable for a completed, failed or blocked record.
func (l *Ledger) Cancel(ctx context.Context, actor Actor, key IdempotencyKey, reason string, now time.Time) (TaskState, error) {
	for {
		cur, err := l.load(ctx, key)
		if err != nil {
			return TaskState{}, err
		}
		if cur.Status != StatusPending && cur.Status != StatusClaimed {
			return TaskState{}, fmt.Errorf("%w: %q is %s", ErrNotCancellable, string(key), cur.Status)
		}
		if reason == "" {
			reason = "cancelled by " + string(actor)
		}
		next := cur.clone()
		next.Status, next.LeaseUntil, next.Lease, next.Cancelled = StatusFailed, time.Time{}, "", true
		next.LastError = TruncateError(reason)
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, CancelledEvent
		after := func() error { return l.blockDependents(ctx, actor, key, now) }
		if rec, ok, err := l.commit(ctx, cur, next, "cancelled, blocking its dependents", after); err != nil || ok {
			return rec, err
		}
	}
}

// Delete removes a completed, failed or blocked record (ErrNotFinal for
// a pending or claimed one); the store's delete is its DeletedEvent. The key can then
// be admitted again; its fences keep rising. Dependents that still name
// it treat it as a need without a record: it blocks nothing and is not
// completed. The store must implement RecordDeleter (ErrNoDelete).
func (l *Ledger) Delete(ctx context.Context, actor Actor, key IdempotencyKey, now time.Time) error {
	del, ok := l.store.(RecordDeleter)
	if !ok {
		return ErrNoDelete
	}
	for {
		cur, err := l.load(ctx, key)
		if err != nil {
			return err
		}
		if !cur.Status.final() {
			return fmt.Errorf("%w: %q is %s", ErrNotFinal, string(key), cur.Status)
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
