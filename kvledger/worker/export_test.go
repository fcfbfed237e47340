package worker

import "time"

// Test hooks into the worker's view of the lease bucket.

// SlotKey is the lease key of slot i of group.
func SlotKey(w *Worker, group string, i int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ix.groups[group].keys[i]
}

// DeliverLease applies a change of a lease-bucket key as the lease watch
// delivers it, so a test can deliver one late, in an order it chooses.
func DeliverLease(w *Worker, key string, live bool, rev uint64) { w.leaseChange(key, live, rev) }

// LeaseSeen is the worker's view of key: live, at revision rev.
func LeaseSeen(w *Worker, key string) (live bool, rev uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.ix.leases[key]
	return s.live, s.rev
}

// GroupRoom is how many more tasks of group the worker may start now.
func GroupRoom(w *Worker, group string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ix.room(w.ix.groups[group])
}

// Ahead is how many claimed attempts wait for a handler slot: a claim
// the ledger shows may not have reached this queue yet (its answer is
// still on its way to the worker).
func Ahead(w *Worker) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ahead)
}

// Starting reports whether Start has begun (started is set).
func Starting(w *Worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

// PresenceKey is presenceKey: a fresh key of a worker's presence lease.
var PresenceKey = presenceKey

// Timers is how many keys wait on the worker's timer heap (a RunAt, or a
// look again after a failure).
func Timers(w *Worker) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ix.timers.Len()
}

// PickupBound is the bound doc.go states on how long a worker with
// OpTimeout opTimeout stays idle with a task ready after the ledger's
// stream leader moved or restarted.
func PickupBound(opTimeout time.Duration) time.Duration { return pickupBound(opTimeout) }
