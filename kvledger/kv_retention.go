package kvledger

import (
	"context"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Under a Retention a final record carries a per-key TTL, so the server
// removes it a Retention after its final write. A pending or claimed task
// that needs the record would then wait for good: a need without a
// record is never completed. So a record is kept while a task that needs
// it has not ended, and its Retention runs from the end of the last one:
//
//   - after a final write, a record that a pending or claimed task needs
//     is written again without its TTL (keepIfNeeded);
//   - after the insert of a task that has not ended (or a rebase that
//     changed its needs), each of its needs that is final and set to
//     expire is written again without its TTL (keepNeeds);
//   - after the final write of a task with needs, once its dependency
//     index entries are gone, each need that is final, kept (no TTL) and
//     needed by no pending or claimed task any more is written again with
//     the Retention (rearmNeeds).
//
// Each check runs after the write it follows, and reads from the stream
// leader, so a need and a dependent written at once cannot both miss the
// other: whichever checks last sees the other's write. These writes are
// the record unchanged (status, fence, result), compare-and-sets at the
// revision read, named RetainedEvent; each rolls its key up as a final
// write under a Retention does. They follow a write that stands, so they
// are best effort: one that fails (the store unreachable just then)
// leaves the record as it was, and the next dependent to end or be
// admitted looks again.

// retainedHeader returns the headers of a retention write: its event
// name, the status it leaves (as every record write carries, so a status
// filter reads it without decoding), and the roll-up that leaves the key
// holding that one write.
func retainedHeader(status Status) nats.Header {
	return nats.Header{EventHeader: []string{string(RetainedEvent)}, StatusHeader: []string{string(status)},
		jetstream.MsgRollup: []string{jetstream.MsgRollupSubject}}
}

// retained settles the retention of the record the store just wrote as
// rec (ttl: the TTL that write carried), when the store has a Retention.
// needsMoved reports an insert, or a write whose needs differ from the
// record before.
func (s *KVStore) retained(parent context.Context, rec TaskState, ttl time.Duration, needsMoved bool) {
	if s.retention <= 0 {
		return
	}
	// The write stands whatever the caller does next; each operation is
	// bounded by the store's op timeout, the whole by a few of them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 4*s.ops.Duration())
	defer cancel()
	switch {
	case rec.Status.final():
		if len(rec.Needs) > 0 {
			s.unindexNeeds(rec.Key, rec.Needs, rec.Rev)
			s.rearmNeeds(ctx, rec.Needs)
		}
		if ttl > 0 {
			s.keepIfNeeded(ctx, rec)
		}
	case needsMoved && len(rec.Needs) > 0:
		s.keepNeeds(ctx, rec.Needs)
	}
}

// keepIfNeeded writes rec, a final record just written with its TTL,
// again without it when a pending or claimed task needs it.
func (s *KVStore) keepIfNeeded(ctx context.Context, rec TaskState) {
	if deps, err := s.unendedDependents(ctx, rec.Key); err == nil && len(deps) > 0 {
		s.retain(ctx, rec, 0)
	}
}

// keepNeeds writes each final need set to expire again without its TTL:
// a task that has not ended now needs it.
func (s *KVStore) keepNeeds(ctx context.Context, needs []IdempotencyKey) {
	for _, n := range needs {
		if rec, e, ok := s.loadFinal(ctx, n); ok && e.Expiring {
			s.retain(ctx, rec, 0)
		}
	}
}

// rearmNeeds gives each kept final need its Retention again once no
// pending or claimed task needs it.
func (s *KVStore) rearmNeeds(ctx context.Context, needs []IdempotencyKey) {
	for _, n := range needs {
		rec, e, ok := s.loadFinal(ctx, n)
		if !ok || e.Expiring {
			continue
		}
		if deps, err := s.unendedDependents(ctx, n); err == nil && len(deps) == 0 {
			s.retain(ctx, rec, s.retention)
		}
	}
}

// loadFinal reads key's record and its stored message from the stream
// leader; ok only for a final record that decodes.
func (s *KVStore) loadFinal(ctx context.Context, key IdempotencyKey) (TaskState, kvx.Entry, bool) {
	octx, cancel := s.ops.Bound(ctx)
	e, err := s.b.Get(octx, taskKey(key))
	cancel()
	if err != nil {
		return TaskState{}, kvx.Entry{}, false
	}
	rec, err := decodeRecord(key, e.Value, e.Revision)
	if err != nil || !rec.Status.final() {
		return TaskState{}, kvx.Entry{}, false
	}
	return rec, e, true
}

// retain writes rec again, unchanged, with ttl (0: none), only while its
// key is at rec.Rev: a record that moved meanwhile is left alone.
func (s *KVStore) retain(ctx context.Context, rec TaskState, ttl time.Duration) {
	value, err := encodeRecord(rec, false)
	if err != nil {
		return
	}
	octx, cancel := s.ops.Bound(ctx)
	_, _ = s.b.UpdateAs(octx, taskKey(rec.Key), value, rec.Rev, ttl, writeID(), retainedHeader(rec.Status))
	cancel()
}

// unendedDependents lists the pending or claimed tasks that need key,
// through the dependency index, each read from the stream leader.
func (s *KVStore) unendedDependents(ctx context.Context, key IdempotencyKey) ([]IdempotencyKey, error) {
	var all []IdempotencyKey
	err := s.Dependents(ctx, key, func(d IdempotencyKey) bool {
		all = append(all, d)
		return true
	})
	if err != nil {
		return nil, err
	}
	return unended(ctx, s, key, all)
}

// needsMoved reports whether a write of new over old (zero: an insert)
// names needs the record did not name before.
func needsMoved(old, new TaskState) bool {
	return !slices.Equal(old.Needs, new.Needs)
}
