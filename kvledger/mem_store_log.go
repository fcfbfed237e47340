package kvledger

import (
	"context"

	"github.com/natscoord/natscoord/events"
)

// memLog is the MemStore's in-memory equivalent of a ledger bucket's
// stream: every write as its event (named like the KVStore's, with the
// key's previous revision), EventHistory kept per key, and the most
// recent memLogMax in write order for followers.
type memLog struct {
	byKey map[IdempotencyKey][]events.Event
	prev  map[IdempotencyKey]uint64 // the key's last revision, deletions included
	all   []events.Event            // write order; all[0] is the oldest kept
	// dropped is the revision of the newest write trimmed from all.
	dropped uint64
	// wake is closed (and replaced) on every write, for followers.
	wake chan struct{}
}

// memLogMax bounds the MemStore's write-order log.
const memLogMax = 1 << 16

// eventName is the transition a record write names: its LastEvent, or
// RestoredEvent for a record that names none (Restore's writes). The
// KVStore stores it as EventHeader; the MemStore in its log.
func eventName(rec TaskState) events.Name {
	if rec.LastEvent == "" {
		return RestoredEvent
	}
	return rec.LastEvent
}

// logLocked logs the write of key at rev: rec (nil for a deletion).
func (m *MemStore) logLocked(key IdempotencyKey, rev uint64, rec *TaskState) {
	lg := &m.log
	if lg.byKey == nil {
		lg.byKey = make(map[IdempotencyKey][]events.Event)
		lg.prev = make(map[IdempotencyKey]uint64)
		lg.wake = make(chan struct{})
	}
	e := events.Event{Name: DeletedEvent, Source: m.name, Key: string(key), Revision: rev}
	if rec != nil {
		e = EventOf(m.name, *rec)
		e.Name = eventName(*rec)
	}
	e.PrevRevision = lg.prev[key]
	lg.prev[key] = rev
	h := append(lg.byKey[key], e)
	if len(h) > EventHistory {
		h = append(h[:0:0], h[len(h)-EventHistory:]...)
	}
	lg.byKey[key] = h
	if len(lg.all) >= memLogMax {
		cut := len(lg.all) - memLogMax/2
		lg.dropped = lg.all[cut-1].Revision
		lg.all = append(lg.all[:0:0], lg.all[cut:]...)
	}
	lg.all = append(lg.all, e)
	close(lg.wake)
	lg.wake = make(chan struct{})
}

var _ EventLog = (*MemStore)(nil)

// KeyEvents implements EventLog: the key's last EventHistory writes.
func (m *MemStore) KeyEvents(ctx context.Context, key IdempotencyKey) ([]events.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]events.Event(nil), m.log.byKey[key]...), nil
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
		var batch []events.Event
		all := m.log.all
		if after < m.log.dropped {
			m.mu.Unlock()
			return events.Gap{Source: m.name, After: after, Through: m.log.dropped, Next: all[0].Revision}
		}
		for _, e := range all {
			if e.Revision > after {
				batch = append(batch, e)
			}
		}
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
