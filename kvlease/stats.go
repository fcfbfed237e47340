package kvlease

import "sync/atomic"

// Stats counts a manager's lease activity since NewManager.
type Stats struct {
	// Active is the number of guards held now.
	Active int64
	// Acquired counts successful acquisitions (Acquire, TryAcquire,
	// semaphore slots); Restored ones are counted separately.
	Acquired uint64
	// Contended counts acquisition attempts that found the key held.
	Contended uint64
	// Attempts counts acquisition publishes sent (create-if-absent tries,
	// won or lost). A waiter woken by a release sends one for the freed
	// key, whatever the number of keys (semaphore slots) it waits on.
	Attempts uint64
	// Lost counts guards that ended with ErrLost.
	Lost uint64
	// Renewals counts successful renewals; RenewFailures counts renewal
	// attempts that failed transiently and were retried (a renewal that
	// finds the lease taken is counted in Lost).
	Renewals      uint64
	RenewFailures uint64
	// Released counts leases deleted by their holder's Release.
	Released uint64
	// HandedOver counts leases passed straight to a waiter (HandOver);
	// they are counted in Released too.
	HandedOver uint64
	// ForceReleased counts leases removed by ForceRelease.
	ForceReleased uint64
	// Exported and Restored count transfers out of and into the manager.
	Exported uint64
	Restored uint64
	// Reclaimed counts conflicts on a guard's own writes that turned out
	// not to be loss: the lease was still ours, stored at another revision
	// than recorded (see RELIABILITY.md); the guard adopted that revision.
	// A release refused by a stale answer although its delete had landed
	// counts here too.
	Reclaimed uint64
}

type counters struct {
	active                                    atomic.Int64
	acquired, contended, lost, attempts       atomic.Uint64
	renewals, renewFailures, released, forced atomic.Uint64
	exported, restored, reclaimed             atomic.Uint64
	handedOver                                atomic.Uint64
}

// Stats returns a snapshot of the manager's counters.
func (m *Manager) Stats() Stats {
	c := &m.stats
	return Stats{
		Active: c.active.Load(), Acquired: c.acquired.Load(), Contended: c.contended.Load(),
		Attempts: c.attempts.Load(),
		Lost:     c.lost.Load(), Renewals: c.renewals.Load(), RenewFailures: c.renewFailures.Load(),
		Released: c.released.Load(), HandedOver: c.handedOver.Load(), ForceReleased: c.forced.Load(),
		Exported: c.exported.Load(), Restored: c.restored.Load(), Reclaimed: c.reclaimed.Load(),
	}
}
