package kvledger

import (
	"context"
	"fmt"
)

// absenceConfirmer is a store that can make a "no such record" answer
// trustworthy before an operation acts on it.
//
// A KVStore reads from the bucket stream's leader, which is
// read-your-writes except for one window: a leader cut off from its
// quorum keeps answering reads from its last state until it notices
// (seconds). In that window a client on its side of a partition can be
// told that a task admitted on the majority does not exist. Claim,
// Takeover, Renew, Release, Complete, Reopen, Cancel, Delete and the
// runtime's outcome (finish, runtime_hooks.go) would then return ErrNoKey, a definite and false answer. Before they
// do, the store writes to its sync key: a write only a leader with a
// quorum acknowledges, after which its reads are current. The cut-off
// leader cannot commit it, so the operation fails with an unknown-outcome
// error within its bound instead; a record that exists is found by the
// read after the write. A missing record therefore costs one write and
// one read more, and only the operations that write anyway pay it: State,
// Results and listings stay reads.
type absenceConfirmer interface {
	confirmAbsent(ctx context.Context, key IdempotencyKey) error
}

var _ absenceConfirmer = (*KVStore)(nil)

// confirmAbsent implements absenceConfirmer with a write to the sync key,
// bounded by the store's operation timeout.
func (s *KVStore) confirmAbsent(ctx context.Context, key IdempotencyKey) error {
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	if err := s.b.Barrier(octx, syncKey); err != nil {
		return fmt.Errorf("kvledger: confirm that %q has no record: %w", string(key), err)
	}
	return nil
}
