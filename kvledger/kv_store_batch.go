package kvledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// batchInserter is an optional Store capability: insert many new
// records at once, all or none. ok false (no error) means the batch was
// refused as a whole (a key already had a record or marker, or the
// server does not allow atomic batches); nothing was written.
type batchInserter interface {
	insertBatch(ctx context.Context, recs []TaskState) (stored []TaskState, ok bool, err error)
	atomicBatches(ctx context.Context) bool
}

var _ batchInserter = (*KVStore)(nil)

// EnableAtomicBatches allows atomic batch publishes on the bucket's
// stream (nats-server >= 2.12), which AdmitMany then uses: a batch of up
// to 1000 new tasks costs one round trip. It changes the stream's
// configuration, so it is an explicit step, not something NewKVStore
// does by itself.
func (s *KVStore) EnableAtomicBatches(ctx context.Context) error {
	if err := s.b.EnableAtomicBatches(ctx); err != nil {
		return fmt.Errorf("kvledger: %w", err)
	}
	return nil
}

func (s *KVStore) atomicBatches(ctx context.Context) bool {
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	ok, err := s.b.AtomicBatches(octx)
	return err == nil && ok
}

// insertBatch implements batchInserter with one atomic batch of
// insert-if-absent publishes. A commit whose answer was lost is resolved
// by reading the first key back and finding this batch's own write id on
// it: the batch landed as a whole or not at all.
func (s *KVStore) insertBatch(ctx context.Context, recs []TaskState) ([]TaskState, bool, error) {
	keys := make([]string, len(recs))
	values := make([][]byte, len(recs))
	for i, r := range recs {
		v, err := encodeRecord(r, true)
		if err != nil {
			return nil, false, nil // let the one-by-one path report it
		}
		keys[i], values[i] = taskKey(r.Key), v
	}
	id := writeID()
	octx, cancel := s.ops.Bound(ctx)
	revs, err := s.b.CreateBatchAs(octx, id, keys, values)
	cancel()
	switch {
	case kvx.IsConflict(err), errors.Is(err, kvx.ErrNoAtomic):
		return nil, false, nil
	case kvx.OutcomeUnknown(err):
		if _, ok := s.landedWrite(ctx, keys[0], kvx.BatchMsgID(id, 0)); !ok {
			return nil, false, fmt.Errorf("kvledger: batch of %d: %w", len(recs), err)
		}
		// It landed; the revisions are not known without reading each key.
		out := make([]TaskState, len(recs))
		for i, r := range recs {
			cur, found, lerr := s.Load(ctx, r.Key)
			if lerr != nil || !found {
				return nil, false, errors.Join(err, lerr)
			}
			out[i] = cur
		}
		return out, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("kvledger: batch of %d: %w", len(recs), err)
	}
	out := make([]TaskState, len(recs))
	for i, r := range recs {
		st := r.clone()
		st.Rev = revs[i]
		st.Fence = max(st.Fence, FenceToken(revs[i]))
		out[i] = st
	}
	return out, true, nil
}
