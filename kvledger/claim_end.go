package kvledger

import "context"

// endClaim is the loop of every call that ends the caller's claim of key
// at fence: Complete, Release and the runtime's outcome (finish). Each
// attempt loads the claim (loadClaim in the seed's order for these calls:
// ErrNoKey, ErrFenced, ErrNotClaimed)
// and writes the record end makes of it (commit, validated). A claim
// that Cancel asked to stop (CancelRequested) ends cancelled instead,
// whatever end makes of it, and its dependents are blocked: the one
// place an owner's end of a cancelled claim is decided. Once the write
// landed, the claim's lease is deleted if this Ledger took it
// (dropHeld), and only then does after run (a dependency walk, whose
// error is labelled with label): no lease outlives its claim for the
// walk. A lost compare-and-swap reloads and decides again.
func (l *Ledger) endClaim(ctx context.Context, key IdempotencyKey, owner OwnerID, fence FenceToken, end func(cur TaskState) TaskState, label string, after func() error) (TaskState, error) {
	for {
		cur, err := l.loadClaim(ctx, key, owner, fence, fenceFirst)
		if err != nil {
			return TaskState{}, err
		}
		next, lbl, aft := end(cur), label, after
		if cur.CancelRequested {
			next, lbl = cancelled(cur, next.UpdatedBy, cur.Owner, cur.Fence, next.UpdatedAt), cancelLabel
			aft = func() error { return l.blockDependents(ctx, next.UpdatedBy, key, next.UpdatedAt) }
		}
		rec, ok, err := l.commit(ctx, cur, next, lbl, aft)
		if err != nil || ok {
			return rec, err
		}
	}
}
