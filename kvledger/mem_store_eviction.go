package kvledger

import "slices"

// evictLocked deletes records, oldest insert first, until the store is
// back at MaxEntries or only undeletable records are left. A record is
// undeletable while it is claimed with a LeaseUntil after Now(): its
// owner is working and must be able to finish. The record just inserted
// (keep) is also spared, so an Admit that returned true finds its record.
//
// The scan walks the queue once per insert; skipped (live) records stay
// in place and are reconsidered on the next insert, after their lease
// may have run out.
func (m *MemStore) evictLocked(keep IdempotencyKey) {
	max := m.opts.MaxEntries
	if max <= 0 || len(m.tasks) <= max {
		return
	}
	now := m.opts.Clock.Now()
	kept := m.evictQueue[:0]
	for i, k := range m.evictQueue {
		if len(m.tasks) <= max {
			kept = append(kept, m.evictQueue[i:]...)
			break
		}
		s := m.tasks[k]
		if k == keep || (s.Status == StatusClaimed && s.LeaseUntil.After(now)) {
			kept = append(kept, k)
			continue
		}
		m.deleteLocked(k, s)
	}
	clear(m.evictQueue[len(kept):])
	m.evictQueue = kept
}

// deleteLocked removes one record and its index entries, and lifts the
// fence floor past its fence.
func (m *MemStore) deleteLocked(k IdempotencyKey, s TaskState) {
	delete(m.tasks, k)
	m.fenceFloor = max(m.fenceFloor, s.Fence)
	for _, n := range s.Needs {
		if set := m.rdeps[n]; set != nil {
			delete(set, k)
			if len(set) == 0 {
				delete(m.rdeps, n)
			}
		}
	}
}

// dropLocked is deleteLocked for a record removed by a caller
// (DeleteRecord) rather than by eviction: it also leaves the eviction queue, which
// Range walks.
func (m *MemStore) dropLocked(k IdempotencyKey, s TaskState) {
	m.deleteLocked(k, s)
	m.evictQueue = slices.DeleteFunc(m.evictQueue, func(q IdempotencyKey) bool { return q == k })
}
