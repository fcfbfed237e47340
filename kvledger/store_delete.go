package kvledger

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/natscoord/natscoord/internal/kvx"
)

var (
	_ RecordDeleter = (*KVStore)(nil)
	_ RecordDeleter = (*MemStore)(nil)
)

// DeleteRecord implements RecordDeleter: a delete marker written only
// while the key is at old.Rev. Under a retention the marker expires after
// it, like the final record would have. The record's dependency index
// entries stay (the index tolerates stale entries).
func (s *KVStore) DeleteRecord(ctx context.Context, key IdempotencyKey, old TaskState) (uint64, bool, error) {
	if old.Rev == 0 {
		return 0, false, nil
	}
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	rev, err := s.deleteAt(octx, taskKey(key), old.Rev)
	switch {
	case kvx.IsConflict(err):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("kvledger: delete %q: %w", string(key), closedErr(err))
	}
	return rev, true, nil
}

// deleteAt writes the store's one kind of delete marker on the bucket key
// k, only while k is at rev: under a retention the marker expires after
// it, so a deleted key leaves the bucket as a final record would. Every
// removal of a task key (DeleteRecord, so also an undone Restore, and
// ForceDelete) goes through it.
//
// The marker names DeletedEvent (EventHeader): it is the deletion's event.
func (s *KVStore) deleteAt(ctx context.Context, k string, rev uint64) (uint64, error) {
	return s.b.DeleteWith(ctx, k, rev, s.retention, "", deletedHeader)
}

// deletedHeader is the header of every delete marker of a task key.
var deletedHeader = nats.Header{EventHeader: []string{string(DeletedEvent)}}

// DeleteRecord implements RecordDeleter. The deletion takes the store's
// next revision, as a KV delete marker does, so a record admitted again
// under the key never shares a revision with the deletion (their events
// would share a revision).
func (m *MemStore) DeleteRecord(ctx context.Context, key IdempotencyKey, old TaskState) (uint64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.tasks[key]
	if !ok || !sameVersion(cur, old) {
		return 0, false, nil
	}
	m.dropLocked(key, cur)
	m.rev++
	m.logLocked(key, m.rev, nil)
	return m.rev, true, nil
}
