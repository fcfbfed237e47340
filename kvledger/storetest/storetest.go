// Package storetest is the conformance suite every kvledger.Store must
// pass. It drives the store directly (the compare-and-swap contract) and
// through a kvledger.Ledger (every rule the ledger builds on it: error
// precedence, rebasing, blocking, fencing, takeover, snapshots, events).
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) kvledger.Store { return newMyStore(t) })
//	}
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// NewStore returns a fresh, empty store for one subtest.
type NewStore func(t *testing.T) kvledger.Store

// Run runs every conformance test against stores made by newStore.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, newStore NewStore)
	}{
		{"StoreContract", testStoreContract},
		{"Admit", testAdmit},
		{"RebaseOnHigherSequence", testRebase},
		{"LateAdmissionBlocked", testLateAdmission},
		{"TransitiveBlocking", testTransitiveBlocking},
		{"ClaimChecksNeedsClosure", testClaimClosure},
		{"Fencing", testFencing},
		{"TakeoverOnlyWhenStale", testTakeover},
		{"ErrorPrecedence", testPrecedence},
		{"SeedErrorOrder", testSeedErrorOrder},
		{"SeedCompleteRace", testSeedCompleteRace},
		{"SeedEvents", testSeedEvents},
		{"SnapshotRoundTrip", testSnapshotRoundTrip},
		{"Events", testEvents},
		{"ConcurrentClaims", testConcurrentClaims},
		{"StaleOwner", testStaleOwner},
		{"DeleteRecord", testDeleteRecord},
		{"OwnerChecked", testOwnerChecked},
		{"FenceNeverWraps", testFenceNeverWraps},
		{"Revisions", testRevisions},
		{"Capabilities", testCapabilities},
		{"CancelOfAClaim", testCancelOfAClaim},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore) })
	}
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

const lease = 10 * time.Second

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder reads a ledger's events back from its store's log
// (kvledger.EventLog): the writes are the events, so there is nothing to
// record on the side.
type recorder struct {
	t *testing.T
	l *kvledger.Ledger
}

// events returns the events of keys, key by key, each key's oldest first.
func (r *recorder) events(keys ...string) []events.Event {
	r.t.Helper()
	var out []events.Event
	for _, k := range keys {
		evs, err := r.l.KeyEvents(ctxFor(r.t), kvledger.IdempotencyKey(k))
		suitecheck.NoError(r.t, err)
		out = append(out, evs...)
	}
	return out
}

func (r *recorder) names(key string) []events.Name {
	var out []events.Name
	for _, e := range r.events(key) {
		out = append(out, e.Name)
	}
	return out
}

// newLedger returns a ledger on a new store and the reader of its events;
// it skips the test for a store that keeps no event log.
func newLedger(t *testing.T, newStore NewStore) (*kvledger.Ledger, *recorder) {
	t.Helper()
	store := newStore(t)
	if _, ok := store.(kvledger.EventLog); !ok {
		t.Skip("the store keeps no event log (kvledger.EventLog)")
	}
	l, err := kvledger.New(store)
	suitecheck.NoError(t, err)
	return l, &recorder{t: t, l: l}
}

func admit(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey, needs ...kvledger.IdempotencyKey) {
	t.Helper()
	ok, err := l.Admit(ctxFor(t), "admin", key, 1, map[string]any{"name": string(key)}, t0, needs...)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok, "admit %s", key)
}

func claim(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey, owner kvledger.OwnerID, now time.Time) kvledger.FenceToken {
	t.Helper()
	f, err := l.Claim(ctxFor(t), "worker", key, owner, lease, now)
	suitecheck.NoError(t, err)
	return f
}

func state(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey) kvledger.TaskState {
	t.Helper()
	s, found, err := l.State(ctxFor(t), key)
	suitecheck.NoError(t, err)
	suitecheck.True(t, found, "state of %s", key)
	return s
}

func requireBlocked(t *testing.T, l *kvledger.Ledger, key, by kvledger.IdempotencyKey) {
	t.Helper()
	got, blocked, err := l.Blocked(ctxFor(t), key)
	suitecheck.NoError(t, err)
	suitecheck.True(t, blocked, "%s must be blocked", key)
	suitecheck.Equal(t, by, got, "%s blocked by", key)
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
