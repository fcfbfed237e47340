package kvlease

import "time"

// SetClock replaces the clock of validity windows (simulates a pause or a
// clock that runs ahead). Tests only.
func (m *Manager) SetClock(now func() time.Time) {
	m.mu.Lock()
	m.now = now
	m.mu.Unlock()
}

// Abandon ends g without releasing its lease, as a crashed holder would.
func (g *Guard) Abandon() { g.end(errAbandoned, false, false) }

var errAbandoned = ErrReleased

// Scheduled is the number of guards in the renewal scheduler.
func (m *Manager) Scheduled() int { return m.sched.len() }
