package kvledger

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Complete finishes the caller's claim with StatusCompleted or
// StatusFailed. The order of checks:
//
//  1. ErrUnknownStatus: status is neither (no store access).
//  2. ErrNoKey.
//  3. ErrFenced: fence is not the record's (a newer claim took it, even
//     if that claim has ended since).
//  4. ErrNotClaimed: the record is not claimed, which includes a record
//     this call already finished: a repeated Complete with the token
//     that finished it never rewrites it.
//  5. ErrFenced: owner is not the claim's.
//
// This is the seed ledger's order (Release's too; Renew checks 4 before
// 3). A successful Complete writes CompletedEvent whatever status is, as
// the seed's CompletedEvent: the event's Status and the write's
// StatusHeader tell a failure apart.
//
// The record keeps its Owner and Fence (who finished it) and loses its
// LeaseUntil. On StatusFailed, Complete then blocks every pending or
// claimed record that needs key directly or transitively, each with
// BlockedBy = key, following the store's reverse-dependency index (see
// DependencyIndex) so the cost is the size of the affected subgraph. An
// error during that walk is returned after the failure itself was
// recorded; records the walk missed are still refused by Claim and
// Takeover, which check the needs closure themselves.
func (l *Ledger) Complete(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, status Status, now time.Time) error {
	if status != StatusCompleted && status != StatusFailed {
		return fmt.Errorf("%w: %q", ErrUnknownStatus, string(status))
	}
	var after func() error
	if status == StatusFailed {
		after = func() error { return l.blockDependents(ctx, actor, key, now) }
	}
	_, err := l.endClaim(ctx, key, owner, fence, func(cur TaskState) TaskState {
		next := cur.clone()
		next.Status, next.LeaseUntil, next.Lease = status, time.Time{}, ""
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, CompletedEvent
		return next
	}, finishLabel, after)
	return err
}

// blockDependents blocks, breadth first, every pending or claimed record
// that reaches failed through its needs. Records in any other status are
// walked through but not written (a completed record's dependents still
// depend on failed transitively).
func (l *Ledger) blockDependents(ctx context.Context, actor Actor, failed IdempotencyKey, now time.Time) error {
	return l.blockFrom(ctx, actor, failed, failed, now)
}

// blockFrom is blockDependents walking from root, whose dependents are
// blocked by failed (root itself, or the failure that blocked root).
func (l *Ledger) blockFrom(ctx context.Context, actor Actor, root, failed IdempotencyKey, now time.Time) error {
	return l.walkDependents(ctx, root, func(parent, d IdempotencyKey, _ map[IdempotencyKey]bool) (bool, error) {
		rec, found, err := l.store.Load(ctx, d)
		if err != nil {
			return false, err
		}
		if !found || !slices.Contains(rec.Needs, parent) {
			return false, nil // stale index entry
		}
		return true, l.blockOne(ctx, actor, rec, failed, now)
	})
}

// walkDependents walks breadth first from root through the dependents of
// every key it follows: visit(parent, d, followed) reports whether d is
// followed (its own dependents visited in turn). A key is followed once;
// one not followed may be visited again from another parent. followed
// holds root and every key followed so far. An error from visit or from
// listing dependents ends the walk.
func (l *Ledger) walkDependents(ctx context.Context, root IdempotencyKey, visit func(parent, d IdempotencyKey, followed map[IdempotencyKey]bool) (bool, error)) error {
	followed := map[IdempotencyKey]bool{root: true}
	queue := []IdempotencyKey{root}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		deps, err := l.dependents(ctx, parent)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if followed[d] {
				continue
			}
			ok, err := visit(parent, d, followed)
			if err != nil {
				return err
			}
			if ok {
				followed[d] = true
				queue = append(queue, d)
			}
		}
	}
	return nil
}

// dependents lists the keys naming need, from the index when the store
// has one, else by a full Range: a store without an index still blocks
// every dependent, at the cost of reading every record.
func (l *Ledger) dependents(ctx context.Context, need IdempotencyKey) ([]IdempotencyKey, error) {
	var out []IdempotencyKey
	if l.index != nil {
		err := l.index.Dependents(ctx, need, func(k IdempotencyKey) bool {
			out = append(out, k)
			return true
		})
		return out, err
	}
	err := l.store.Range(ctx, func(s TaskState) bool {
		if slices.Contains(s.Needs, need) {
			out = append(out, s.Key)
		}
		return true
	})
	return out, err
}

// blockOne writes rec blocked by blocker when it is pending or claimed,
// reloading on a lost compare-and-swap until it is blocked or no longer
// blockable. A claimed record loses its lease (its owner's Complete then
// gets ErrNotClaimed) but keeps Owner and Fence.
func (l *Ledger) blockOne(ctx context.Context, actor Actor, rec TaskState, blocker IdempotencyKey, now time.Time) error {
	_, _, err := l.block(ctx, actor, rec, blocker, now)
	return err
}

// block is blockOne that also returns the blocked record it wrote; wrote
// is false when it wrote none (the record was no longer blockable).
func (l *Ledger) block(ctx context.Context, actor Actor, rec TaskState, blocker IdempotencyKey, now time.Time) (blocked TaskState, wrote bool, err error) {
	for {
		if rec.Status != StatusPending && rec.Status != StatusClaimed {
			return TaskState{}, false, nil
		}
		next := rec.clone()
		next.Status, next.BlockedBy, next.LeaseUntil, next.Lease = StatusBlocked, blocker, time.Time{}, ""
		next.CancelRequested = false
		next.UpdatedBy, next.UpdatedAt, next.LastEvent = actor, now, BlockedEvent
		if err := next.Validate(); err != nil {
			return TaskState{}, false, err
		}
		stored, ok, err := l.write(ctx, rec, true, next)
		if err != nil || ok {
			return stored, ok && err == nil, err
		}
		cur, found, err := l.store.Load(ctx, rec.Key)
		if err != nil || !found {
			return TaskState{}, false, err
		}
		rec = cur
	}
}

// blockingAncestor returns the nearest key (breadth first over Needs) in
// rec's transitive needs whose record is failed or blocked, or "". It
// reads only ancestors: the cost is the size of the needs closure. A need
// without a record blocks nothing. read holds what the caller read of
// some of them already (nil: nothing); those are not read again.
func (l *Ledger) blockingAncestor(ctx context.Context, rec TaskState, read needReads) (IdempotencyKey, error) {
	visited := map[IdempotencyKey]bool{rec.Key: true}
	queue := slices.Clone(rec.Needs)
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		if visited[k] {
			continue
		}
		visited[k] = true
		s, found, err := read.load(ctx, l.store, k)
		if err != nil {
			return "", err
		}
		if !found {
			continue
		}
		if s.Status.blocks() {
			return k, nil
		}
		queue = append(queue, s.Needs...)
	}
	return "", nil
}

// BlockDependents finishes the failure walk of key: when key's record is
// failed or blocked, every pending or claimed record that reaches it
// through its needs is blocked (by key, or by the failure that blocked
// key), each with its own compare-and-set and event. Complete(failed) and
// the runtime's failed outcome (finish) run the same walk after their write; this is for
// whoever sees a failure whose walk may not have run to its end (the
// writer's answer was lost and its retry found the record final, its walk
// ran out of time, or it died in between). Without it such dependents
// would stay pending: a worker never claims a task whose needs are not
// completed, so no claim would find the failure. It is idempotent and
// does nothing for a record in any other status.
func (l *Ledger) BlockDependents(ctx context.Context, actor Actor, key IdempotencyKey, now time.Time) error {
	rec, found, err := l.store.Load(ctx, key)
	switch {
	case err != nil:
		return err
	case !found:
		return nil
	case rec.Status == StatusFailed:
		return l.blockFrom(ctx, actor, key, key, now)
	case rec.Status == StatusBlocked && rec.BlockedBy != "":
		return l.blockFrom(ctx, actor, key, rec.BlockedBy, now)
	}
	return nil
}
