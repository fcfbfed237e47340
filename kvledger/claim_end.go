package kvledger

import "context"

// endClaim is the loop of every call that ends the caller's claim of key
// at fence: Complete, Release and the runtime's outcome (finish). Each
// attempt loads the claim (loadClaim: ErrNoKey, ErrNotClaimed, ErrFenced),
// writes the record end makes of it (commit: validated, then after, whose
// error is labelled with label), and once the write landed deletes the
// claim's lease if this Ledger took it (dropHeld). A lost
// compare-and-swap reloads and decides again.
func (l *Ledger) endClaim(ctx context.Context, key IdempotencyKey, owner OwnerID, fence FenceToken, end func(cur TaskState) TaskState, label string, after func() error) (TaskState, error) {
	for {
		cur, err := l.loadClaim(ctx, key, owner, fence)
		if err != nil {
			return TaskState{}, err
		}
		rec, ok, err := l.commit(ctx, cur, end(cur), label, after)
		if ok {
			l.dropHeld(ctx, key, fence)
		}
		if err != nil || ok {
			return rec, err
		}
	}
}
