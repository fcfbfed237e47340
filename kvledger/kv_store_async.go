package kvledger

import (
	"context"

	"github.com/natscoord/natscoord/internal/kvx"
)

// AsyncSwapper is an optional Store capability: Swap sent without waiting
// for the store, so that several compare-and-swaps of different keys are
// in flight at once, each answered on its own (a lost race refuses only
// its own write). wait, called once and bounded by its ctx, returns what
// Swap would have. The KVStore implements it with pipelined publishes
// (kvx.Bucket.UpdateAsyncAs); the runtime's pipelined outcome
// (finishAsync) uses it.
type AsyncSwapper interface {
	SwapAsync(key IdempotencyKey, old, new TaskState) (wait func(context.Context) (TaskState, bool, error))
}

var _ AsyncSwapper = (*KVStore)(nil)

// SwapAsync implements AsyncSwapper for an overwrite (old with a
// revision): the compare-and-set leaves at once, and wait settles it as
// Swap does (a write whose outcome is unknown is read back by its
// Nats-Msg-Id). An insert (old zero) is Swap itself, run by wait.
func (s *KVStore) SwapAsync(key IdempotencyKey, old, new TaskState) func(context.Context) (TaskState, bool, error) {
	value, ttl, insert, lost, err := s.swapValue(key, old, new)
	switch {
	case err != nil || lost:
		return func(context.Context) (TaskState, bool, error) { return TaskState{}, false, err }
	case insert:
		return s.swapLater(key, old, new)
	}
	id, moved := writeID(), needsMoved(old, new)
	sent := s.b.UpdateAsyncAs(taskKey(key), value, old.Rev, ttl, id, writeHeaders(new, ttl > 0))
	return func(ctx context.Context) (TaskState, bool, error) {
		octx, cancel := s.ops.Bound(ctx)
		rev, err := sent(octx)
		cancel()
		stored, ok, _, err := s.swapped(ctx, key, new, false, moved, ttl, id, rev, kvx.Entry{}, err)
		return stored, ok, err
	}
}

// swapLater is SwapAsync's insert: Swap, run by wait. It is a function of
// its own so that only this path keeps old: a closure in SwapAsync that
// captured it would move old to the heap on every overwrite too.
func (s *KVStore) swapLater(key IdempotencyKey, old, new TaskState) func(context.Context) (TaskState, bool, error) {
	return func(ctx context.Context) (TaskState, bool, error) { return s.Swap(ctx, key, old, new) }
}
