package kvledger

import (
	"cmp"
	"context"
	"slices"

	"github.com/natscoord/natscoord/events"
)

// memLog is the MemStore's in-memory equivalent of a ledger bucket's
// stream: every write as its event (named like the KVStore's, with the
// key's previous revision), the most recent memLogMax in write order.
// A key's history (KeyEvents) is read from the same log, so the log is
// bounded whatever the records do (MaxEntries evicts records, not their
// past writes, as a bucket's limits would).
type memLog struct {
	prev map[IdempotencyKey]uint64 // the key's last revision, deletions included
	all  []events.Event            // write order; all[0] is the oldest kept
	// dropped is the revision of the newest write trimmed from all.
	dropped uint64
	// wake, made by a follower (Follow), is closed by the next write: a
	// store nobody follows makes no channel per write.
	wake chan struct{}
}

// memLogMax bounds the MemStore's write-order log.
const memLogMax = 1 << 16

// eventName is the transition a record write names: its LastEvent (as
// this version names it: a record restored from an older snapshot may
// carry a renamed one), or RestoredEvent for a record that names none
// (Restore's writes). The KVStore stores it as EventHeader; the MemStore
// in its log.
func eventName(rec TaskState) events.Name {
	if rec.LastEvent == "" {
		return RestoredEvent
	}
	return currentEvent(rec.LastEvent)
}

// logLocked logs the write of key at rev: rec (nil for a deletion).
func (m *MemStore) logLocked(key IdempotencyKey, rev uint64, rec *TaskState) {
	lg := &m.log
	if lg.prev == nil {
		lg.prev = make(map[IdempotencyKey]uint64)
	}
	e := events.Event{Name: DeletedEvent, Source: m.name, Key: string(key), Revision: rev}
	if rec != nil {
		e = EventOf(m.name, *rec)
		e.Name = eventName(*rec)
	}
	e.PrevRevision = lg.prev[key]
	lg.prev[key] = rev
	if len(lg.all) >= memLogMax {
		cut := len(lg.all) - memLogMax/2
		lg.dropped = lg.all[cut-1].Revision
		lg.all = append(lg.all[:0:0], lg.all[cut:]...)
	}
	lg.all = append(lg.all, e)
	if lg.wake != nil {
		close(lg.wake)
		lg.wake = nil
	}
}

var _ EventLog = (*MemStore)(nil)

// KeyEvents implements EventLog: the key's last EventHistory writes the
// log still holds (a scan of it: the MemStore is for tests and small
// programs).
func (m *MemStore) KeyEvents(ctx context.Context, key IdempotencyKey) ([]events.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []events.Event
	for i := len(m.log.all) - 1; i >= 0 && len(out) < EventHistory; i-- {
		if e := m.log.all[i]; e.Key == string(key) {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// Follow calls fn for every write with a revision above after, in write
// order, until ctx ends (it returns ctx's error) or fn returns false
// (nil). A follower that fell behind the memLogMax writes kept gets an
// events.Gap over what it missed (as an error) and no further events: the
// in-memory counterpart of a durable consumer on the bucket's stream. It
// runs on the caller's goroutine.
func (m *MemStore) Follow(ctx context.Context, after uint64, fn func(events.Event) bool) error {
	for {
		m.mu.Lock()
		if m.log.wake == nil {
			m.log.wake = make(chan struct{})
		}
		all := m.log.all
		if after < m.log.dropped {
			m.mu.Unlock()
			return events.Gap{Source: m.name, After: after, Through: m.log.dropped, Next: all[0].Revision}
		}
		// all is in revision order: the writes above after are its tail.
		i, _ := slices.BinarySearchFunc(all, after+1, func(e events.Event, rev uint64) int { return cmp.Compare(e.Revision, rev) })
		batch := slices.Clone(all[i:])
		wake := m.log.wake
		m.mu.Unlock()
		for _, e := range batch {
			if !fn(e) {
				return nil
			}
			after = e.Revision
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}
