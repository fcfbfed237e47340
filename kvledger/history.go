package kvledger

import (
	"context"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Historian is a Store that keeps the writes of a record, not only its
// last one. The KVStore is one: its bucket keeps as many writes per key
// as the bucket's History setting.
type Historian interface {
	// History returns the stored writes of key's current record, oldest
	// first, each with Rev set to its revision; none when key has no
	// record.
	History(ctx context.Context, key IdempotencyKey) ([]TaskState, error)
}

var _ Historian = (*KVStore)(nil)

// History implements Historian: the writes the bucket still keeps of
// key's record since its last delete or expiry (an earlier incarnation of
// the key is not this record's history), read through kvx.Bucket.History. A bucket keeps as many
// writes per key as its History setting; a bucket created with History 1
// keeps only the last write, so History then returns one record. A kept
// value that is not a valid record returns ErrCorruptRecord.
func (s *KVStore) History(ctx context.Context, key IdempotencyKey) ([]TaskState, error) {
	if key == "" {
		return nil, nil
	}
	octx, cancel := s.ops.Bound(ctx)
	var es []kvx.Entry
	err := s.b.History(octx, taskKey(key), func(m kvx.Stored) bool {
		es = append(es, m.Entry)
		return true
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("kvledger: history of %q: %w", string(key), err)
	}
	from := 0
	for i, e := range es {
		if e.Op != kvx.OpPut {
			from = i + 1 // a delete or expiry ends the earlier incarnation
		}
	}
	out := make([]TaskState, 0, len(es)-from)
	for _, e := range es[from:] {
		rec, err := decodeRecord(key, e.Value, e.Revision)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// History returns the stored writes of key's record, oldest first (see
// Historian); a store that keeps only the last write (the MemStore)
// returns that one. Attempts reads a task's attempts from it.
func (l *Ledger) History(ctx context.Context, key IdempotencyKey) ([]TaskState, error) {
	if h, ok := l.store.(Historian); ok {
		return h.History(ctx, key)
	}
	s, found, err := l.store.Load(ctx, key)
	if err != nil || !found {
		return nil, err
	}
	return []TaskState{s}, nil
}
