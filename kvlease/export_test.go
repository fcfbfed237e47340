package kvlease

import (
	"context"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
)

// SetClock replaces the clock of validity windows (simulates a pause or a
// clock that runs ahead). Tests only.
func (m *Manager) SetClock(now func() time.Time) {
	m.clk.Store(&clockOf{clock.Func(now)})
}

// CorruptRevision makes g record a revision other than the stored one, as
// a write stored at an unexpected revision would (see reclaim).
func (g *Guard) CorruptRevision(rev uint64) {
	g.mu.Lock()
	g.rev = rev
	g.mu.Unlock()
}

// Scheduled is the number of guards in the renewal scheduler.
func (m *Manager) Scheduled() int { return m.sched.len() }

// CallBound is the stated bound of one call for tests.
func CallBound(c Config) time.Duration { return callBound(c) }

// EndThenDelete ends g as a release does and returns its delete without
// running it, so a test can close the manager between the guard leaving
// the manager and its delete starting.
func (g *Guard) EndThenDelete() (deleteLease func()) {
	_, cleanup := g.finish(ErrReleased, true, true)
	return func() { cleanup(context.Background()) }
}
