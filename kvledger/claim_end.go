package kvledger

import "context"

// endClaim is the loop of every call that ends the caller's claim of key
// at fence: Complete, Release and the runtime's outcome (finish). Each
// attempt loads the claim (loadClaim in the seed's order for these calls:
// ErrNoKey, ErrFenced, ErrNotClaimed)
// and writes the record end makes of it (commit, validated). Once the
// write landed, the claim's lease is deleted if this Ledger took it
// (dropHeld), and only then does after run (a dependency walk, whose
// error is labelled with label): no lease outlives its claim for the
// walk. A lost compare-and-swap reloads and decides again.
func (l *Ledger) endClaim(ctx context.Context, key IdempotencyKey, owner OwnerID, fence FenceToken, end func(cur TaskState) TaskState, label string, after func() error) (TaskState, error) {
	for {
		cur, err := l.loadClaim(ctx, key, owner, fence, fenceFirst)
		if err != nil {
			return TaskState{}, err
		}
		rec, ok, err := l.commit(ctx, cur, end(cur), label, after)
		if err != nil || ok {
			return rec, err
		}
	}
}
