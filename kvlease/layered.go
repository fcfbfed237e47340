package kvlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// This file holds what packages layered on kvlease (kvlock) read from the
// lease bucket: decoded holders, tickets and data keys. Writes under a
// lease go through its Proof. The one exception is kvlock's election
// record (the leader's value beside the election's lease): kvlock reads
// the two keys through a View's feed (Observe) and deletes an ended
// election's record with DeleteKeyAt (a marker conditioned on the
// revision it wrote), since no live lease guards that delete.

// DecodeHolder decodes a stored lease value (as `nats kv get` shows it)
// into its Holder; Revision is left 0. Any value a Manager writes decodes;
// anything else returns an error, never a partial Holder that looks valid.
func DecodeHolder(value []byte) (Holder, error) {
	return decodeValue(value)
}

// HolderID returns DecodeHolder(value).ID (and its error), without
// decoding the whole value when it is laid out as a Manager writes it:
// kvlock's fair waiters compare the holder of every queue entry before
// theirs on every look, and a decode with encoding/json was 7% of the CPU
// of a contended fair acquisition (BENCHMARKS.md, issue 24).
func HolderID(value []byte) (string, error) {
	if id, ok := valueHolderID(value); ok {
		return id, nil
	}
	h, err := decodeValue(value)
	return h.ID, err
}

// HolderOfKey is Leases.Holder for a raw lease key: it reads key from the
// stream leader and returns who holds it (Revision set) and whether it is
// held at all.
func (m *Manager) HolderOfKey(ctx context.Context, key string) (Holder, bool, error) {
	if err := m.checkRawKey(key); err != nil {
		return Holder{}, false, err
	}
	return m.holder(ctx, key)
}

// Ticket draws a ticket from key: it publishes an empty one-second-TTL
// message there, unconditionally, and returns its revision. Tickets drawn
// from one key rise in the order their publishes reached the stream, and
// no two are equal (they are revisions of the bucket), so they order the
// arrivals of a queue the way etcd's revisions do. key must be a raw key
// outside every lease family (it holds no lease). The publish is bounded
// by OpTimeout when ctx has no deadline.
func (m *Manager) Ticket(ctx context.Context, key string) (uint64, error) {
	if err := m.checkDataKey(key); err != nil {
		return 0, err
	}
	octx, cancel := m.opCtx(ctx)
	defer cancel()
	t, err := m.b.Ticket(octx, key)
	if err != nil {
		return 0, fmt.Errorf("kvlease: ticket %q: %w", key, closedErr(err))
	}
	return t, nil
}

// LastTicket returns the revision of key's newest message (a ticket, or the
// marker the server wrote when that ticket's TTL ran out; 0 when key has no
// message at all) and whether it is a ticket still within its TTL. It
// reads one key, so it costs the server the same whatever else the bucket
// holds, and it sees every ticket drawn before the call, unless the
// bucket's shape changed under the running process (replicas raised, or
// a direct-get mirror added: kvx.Bucket.LastFresh and RELIABILITY.md's
// known limit), when the answer may lag. Fair queues accept that window:
// a late view can put a waiter out of turn until its next read, but the
// lock itself is still taken by a compare-and-set, which no view grants.
func (m *Manager) LastTicket(ctx context.Context, key string) (rev uint64, live bool, err error) {
	if err := m.checkDataKey(key); err != nil {
		return 0, false, err
	}
	octx, cancel := m.opCtx(ctx)
	defer cancel()
	e, err := m.b.LastFresh(octx, key)
	switch {
	case errors.Is(err, kvx.ErrNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("kvlease: read %q: %w", key, err)
	}
	return e.Revision, e.Live(), nil
}

// ReadKey reads a data key of the bucket (a raw key outside every lease
// family: a record a layer keeps next to a lease) the way HolderOfKey
// reads a lease: seeing every acknowledged write. ok is false (err nil)
// when key has no live value.
func (m *Manager) ReadKey(ctx context.Context, key string) (value []byte, revision uint64, ok bool, err error) {
	if err := m.checkDataKey(key); err != nil {
		return nil, 0, false, err
	}
	octx, cancel := m.opCtx(ctx)
	defer cancel()
	e, err := m.b.Get(octx, key)
	switch {
	case errors.Is(err, kvx.ErrNotFound):
		return nil, 0, false, nil
	case err != nil:
		return nil, 0, false, fmt.Errorf("kvlease: read %q: %w", key, err)
	}
	return e.Value, e.Revision, true, nil
}

// DeleteKeyAt deletes a data key of the bucket (a raw key outside every
// lease family: a record a layer keeps next to a lease) only while its
// last revision is rev (not 0), leaving a delete marker that expires
// after markerTTL (0: it stays; negative is refused). deleted is false
// (err nil) when the key has moved on from rev: a newer record is never
// removed. The write is bounded by OpTimeout (a later deadline of ctx
// does not lift it).
func (m *Manager) DeleteKeyAt(ctx context.Context, key string, rev uint64, markerTTL time.Duration) (deleted bool, err error) {
	if err := m.checkDataKey(key); err != nil {
		return false, err
	}
	// A revision of 0 would be "delete only if absent" at the server,
	// and a negative TTL is no marker lifetime: neither is a delete of
	// a record the caller read.
	if rev == 0 {
		return false, fmt.Errorf("%w: delete %q at revision 0", ErrInvalidKey, key)
	}
	if markerTTL < 0 {
		return false, fmt.Errorf("%w: delete marker TTL %v", ErrInvalidTTL, markerTTL)
	}
	octx, cancel := m.opCtx(ctx)
	defer cancel()
	_, err = m.b.DeleteTTL(octx, key, rev, markerTTL)
	switch {
	case err == nil:
		return true, nil
	case kvx.IsConflict(err):
		return false, nil
	}
	return false, fmt.Errorf("kvlease: delete %q: %w", key, closedErr(err))
}
