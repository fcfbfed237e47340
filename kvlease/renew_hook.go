package kvlease

import "time"

// RenewHook is called after every automatic renewal attempt of a guard
// (see Guard.OnAutoRenew) with how long it took and its error: nil, a
// transient error (the scheduler tries again within the validity window)
// or one matching ErrLost (the guard has ended).
type RenewHook func(took time.Duration, err error)

// OnAutoRenew sets the hook called after each renewal the manager's
// scheduler makes for g (StartRenewing), replacing any earlier one; nil
// removes it. It runs on one of the manager's renewal workers, so it must
// be quick and must not call g's methods that write (Renew, Release).
//
// It is how a layer on kvlease (kvlock's Observer) sees the renewals of
// leases it no longer renews itself: the manager renews every guard from
// one scheduler and a fixed set of workers, whatever the number of
// guards.
func (g *Guard) OnAutoRenew(f RenewHook) {
	g.mu.Lock()
	g.renewHook = f
	g.mu.Unlock()
}

// renewHookOf returns g's hook (nil when none).
func (g *Guard) renewHookOf() RenewHook {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.renewHook
}
