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
// test set-up, all or nothing. It validates every record first (and
// refuses keys and needs with control characters, as Admit does), and on a
// store that implements RecordChecker (the KVStore: encoding and the
// server's size limits) checks every record against the store too, so a
// record the server would refuse fails the restore before anything is
// written (the error names it). It then inserts the records one by one
// with an insert-if-absent compare-and-swap; at the first key that
// already has a record (ErrExists) or a store error it removes the
// records it inserted, on a store that implements RecordDeleter (both
// stores here), and returns the error. The store may raise a restored Fence (see
// Store) and assigns its own Rev. Restored records carry no LastEvent:
// their writes are named RestoredEvent. The dependency index is rebuilt for them
// (entries left by an undone restore are stale and harmless).
func (l *Ledger) Restore(ctx context.Context, s Snapshot) error {
	if err := s.Validate(); err != nil {
		return err
	}
	for i, t := range s.Tasks {
		if err := checkNewKeys(t.Key, t.Needs); err != nil {
			return fmt.Errorf("kvledger: restore: snapshot task %d: %w; nothing restored", i, err)
		}
	}
	if c, ok := l.store.(RecordChecker); ok {
		for i, t := range s.Tasks {
			if err := c.CheckRecord(t); err != nil {
				return fmt.Errorf("kvledger: restore: snapshot task %d: %w; nothing restored", i, err)
			}
		}
	}
	var done []TaskState
	for _, t := range s.Tasks {
		t = t.clone()
		t.Rev, t.LastEvent = 0, ""
		stored, err := l.restoreOne(ctx, t)
		if err != nil {
			return l.undoRestore(ctx, done, err)
		}
		done = append(done, stored)
	}
	return nil
}

func (l *Ledger) restoreOne(ctx context.Context, t TaskState) (TaskState, error) {
	if l.index != nil && len(t.Needs) > 0 {
		if err := l.index.IndexNeeds(ctx, t.Key, t.Needs); err != nil {
			return TaskState{}, fmt.Errorf("kvledger: restore %q: %w", string(t.Key), err)
		}
	}
	stored, ok, err := l.cas(ctx, t.Key, TaskState{}, t)
	if err != nil {
		return TaskState{}, fmt.Errorf("kvledger: restore %q: %w", string(t.Key), err)
	}
	if !ok {
		return TaskState{}, fmt.Errorf("%w: restore %q", ErrExists, string(t.Key))
	}
	return stored, nil
}

// undoRestore removes the records a failed Restore inserted, each only
// while it is still the version Restore wrote, and returns cause (joined
// with any undo failure).
func (l *Ledger) undoRestore(ctx context.Context, done []TaskState, cause error) error {
	del, ok := l.store.(RecordDeleter)
	if !ok || len(done) == 0 {
		return cause
	}
	uctx := context.WithoutCancel(ctx)
	var errs []error
	for _, t := range done {
		// A record changed since (ok false) is someone else's now: it stays.
		if _, _, err := del.DeleteRecord(uctx, t.Key, t); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(cause, fmt.Errorf("kvledger: restore: undoing %d inserted records: %w", len(done), errors.Join(errs...)))
	}
	return fmt.Errorf("%w; the %d records inserted before were removed", cause, len(done))
}
