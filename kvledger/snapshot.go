package kvledger

import (
	"context"
	"errors"
	"fmt"
)

// Snapshot is a copy of every record of a Store, in the Store's Range
// order.
type Snapshot struct {
	Tasks []TaskState `json:"tasks"`
}

// Validate checks every record and that no key appears twice.
func (s Snapshot) Validate() error {
	seen := make(map[IdempotencyKey]bool, len(s.Tasks))
	for i, t := range s.Tasks {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("kvledger: snapshot task %d: %w", i, err)
		}
		if seen[t.Key] {
			return fmt.Errorf("%w: snapshot task %d: duplicate key %q", ErrInvalidState, i, string(t.Key))
		}
		seen[t.Key] = true
	}
	return nil
}

// Snapshot copies every record through Store.Range. The KVStore streams
// the bucket through one ordered consumer, so a snapshot of 100k records
// costs one pass over the bucket, not a request per key.
//
// When the store holds records that are not valid, Snapshot returns the
// valid ones together with the store's *CorruptRecordsError naming the
// others (errors.Is ErrCorruptRecord), so an operator can save what is
// intact and repair the rest. Any other error returns an empty Snapshot.
func (l *Ledger) Snapshot(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	err := l.store.Range(ctx, func(s TaskState) bool {
		snap.Tasks = append(snap.Tasks, s)
		return true
	})
	var corrupt *CorruptRecordsError
	if errors.As(err, &corrupt) {
		return snap, err
	}
	if err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// Restore inserts every record of s into the store, for a cold start or a
// test set-up. It validates all records first and writes nothing when one
// fails (the error names it). It then inserts them one by one with an
// insert-if-absent compare-and-swap and stops at the first key that
// already has a record (ErrExists) or at a store error; records inserted
// before that stay. The store may raise a restored Fence (see Store) and
// assigns its own Rev. Restored records carry no LastEvent: restoring
// publishes no event. The dependency index is rebuilt for them.
func (l *Ledger) Restore(ctx context.Context, s Snapshot) error {
	if err := s.Validate(); err != nil {
		return err
	}
	for _, t := range s.Tasks {
		t = t.clone()
		t.Rev, t.LastEvent = 0, ""
		if l.index != nil && len(t.Needs) > 0 {
			if err := l.index.IndexNeeds(ctx, t.Key, t.Needs); err != nil {
				return fmt.Errorf("kvledger: restore %q: %w", string(t.Key), err)
			}
		}
		ok, err := l.store.CompareAndSwap(ctx, t.Key, TaskState{}, t)
		if err != nil {
			return fmt.Errorf("kvledger: restore %q: %w", string(t.Key), err)
		}
		if !ok {
			return fmt.Errorf("%w: restore %q", ErrExists, string(t.Key))
		}
	}
	return nil
}
