package kvledger

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/natscoord/natscoord/internal/kvx"
)

// batchInserter is an optional Store capability: insert many new
// records at once, all or none. ok false (no error) means the batch was
// refused as a whole and nothing was written: taken then lists (as
// indexes into recs) the records whose keys already had a record or
// marker, which a conflict refuses; it is empty when the refusal had
// another cause (the server does not allow atomic batches).
type batchInserter interface {
	insertBatch(ctx context.Context, recs []TaskState) (stored []TaskState, taken []int, ok bool, err error)
	atomicBatches(ctx context.Context) bool
}

var _ batchInserter = (*KVStore)(nil)

// EnableAtomicBatches allows atomic batch publishes on the bucket's
// stream (nats-server >= 2.12), which AdmitMany uses: a batch of up to
// 1000 new tasks costs one round trip. No caller needs it any more:
// NewKVStore allows them on a bucket it creates, and AdmitMany on an
// older bucket the first time it would batch. It remains for an operator
// who wants to make the change ahead of time.
func (s *KVStore) EnableAtomicBatches(ctx context.Context) error {
	if err := s.b.EnableAtomicBatches(ctx); err != nil {
		return fmt.Errorf("kvledger: %w", err)
	}
	return nil
}

// atomicBatches reports whether the stream takes atomic batches. A bucket
// created without them (before NewKVStore allowed them on creation) gets
// them here, once per KVStore: the fallback, when the server cannot (before
// nats-server 2.12) or the caller may not update the stream, is AdmitMany
// one submission at a time, as before.
func (s *KVStore) atomicBatches(ctx context.Context) bool {
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	ok, err := s.b.AtomicBatches(octx)
	if err != nil || ok {
		return ok
	}
	if s.enableTried.Swap(true) {
		return false
	}
	return s.b.EnableAtomicBatches(octx) == nil
}

// takenReaders bounds the concurrent reads that find the keys that made
// a batch conflict.
const takenReaders = 32

// taken returns the indexes of keys that have a message (a record or a
// marker: what an insert-if-absent batch conflicts with), read from the
// stream leader, takenReaders at a time.
func (s *KVStore) taken(ctx context.Context, keys []string) ([]int, error) {
	found := make([]bool, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, takenReaders)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			octx, cancel := s.ops.Bound(ctx)
			defer cancel()
			_, err := s.b.Last(octx, k)
			switch {
			case errors.Is(err, kvx.ErrNotFound):
			case err != nil:
				errs[i] = err
			default:
				found[i] = true
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []int
	for i, f := range found {
		if f {
			out = append(out, i)
		}
	}
	return out, nil
}

// insertBatch implements batchInserter with one atomic batch of
// insert-if-absent publishes. A conflict (the server does not say which
// message) is followed by a read of every key of the batch, to name the
// keys that have a record. A commit whose answer was lost is resolved by
// reading the first key back and finding this batch's own write id on
// it: the batch landed as a whole or not at all.
func (s *KVStore) insertBatch(ctx context.Context, recs []TaskState) ([]TaskState, []int, bool, error) {
	keys := make([]string, len(recs))
	values := make([][]byte, len(recs))
	hdrs := make([]nats.Header, len(recs))
	for i, r := range recs {
		v, err := encodeRecord(r, true)
		if err != nil {
			return nil, nil, false, nil // let the one-by-one path report it
		}
		keys[i], values[i], hdrs[i] = taskKey(r.Key), v, writeHeaders(r, false)
	}
	id := writeID()
	octx, cancel := s.ops.Bound(ctx)
	revs, err := s.b.CreateBatchAs(octx, id, keys, values, hdrs)
	cancel()
	switch {
	case kvx.IsConflict(err):
		taken, terr := s.taken(ctx, keys)
		if terr != nil {
			return nil, nil, false, nil // unnamed: the one-by-one path decides each key
		}
		return nil, taken, false, nil
	case errors.Is(err, kvx.ErrNoAtomic):
		return nil, nil, false, nil
	case kvx.OutcomeUnknown(err):
		if _, ok := s.landedWrite(keys[0], kvx.BatchMsgID(id, 0)); !ok {
			return nil, nil, false, fmt.Errorf("kvledger: batch of %d: %w", len(recs), closedErr(err))
		}
		// It landed; the revisions are not known without reading each key.
		out := make([]TaskState, len(recs))
		for i, r := range recs {
			cur, found, lerr := s.Load(ctx, r.Key)
			if lerr != nil || !found {
				return nil, nil, false, errors.Join(err, lerr)
			}
			out[i] = cur
		}
		return out, nil, true, nil
	case err != nil:
		return nil, nil, false, fmt.Errorf("kvledger: batch of %d: %w", len(recs), closedErr(err))
	}
	out := make([]TaskState, len(recs))
	for i, r := range recs {
		st := r.clone()
		st.Rev = revs[i]
		st.Fence = max(st.Fence, FenceToken(revs[i]))
		out[i] = st
	}
	return out, nil, true, nil
}
