package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testSeedEvents: each of the seed's operations writes the seed's event
// name once, and a refused call writes none. Complete fires
// CompletedEvent whatever its outcome; the event's Status tells a failure
// (status failed) from a success. Every dependent a failed Complete
// blocks fires BlockedEvent.
func testSeedEvents(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, rec := newLedger(t, newStore)
	admit(t, l, "ok")
	admit(t, l, "bad")
	admit(t, l, "dep", "bad")
	f := claim(t, l, "ok", "w", t0)
	suitecheck.NoError(t, l.Renew(ctx, "w", "ok", "w", f, lease, t0))
	suitecheck.NoError(t, l.Release(ctx, "w", "ok", "w", f, t0))
	claim(t, l, "ok", "w", t0.Add(-2*lease))
	f, err := l.Takeover(ctx, "w2", "ok", "w2", lease, t0)
	suitecheck.NoError(t, err)
	suitecheck.NoError(t, l.Complete(ctx, "w2", "ok", "w2", f, kvledger.StatusCompleted, t0))
	fb := claim(t, l, "bad", "w", t0)
	suitecheck.NoError(t, l.Complete(ctx, "w", "bad", "w", fb, kvledger.StatusFailed, t0))
	// Refused: these write nothing.
	suitecheck.ErrorIs(t, l.Complete(ctx, "w", "bad", "w", fb, kvledger.StatusFailed, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, l.Complete(ctx, "w", "ok", "w", f-1, kvledger.StatusCompleted, t0), kvledger.ErrFenced)

	suitecheck.Equal(t, []events.Name{"ledger.admitted", "ledger.claimed", "ledger.renewed", "ledger.released",
		"ledger.claimed", "ledger.taken_over", "ledger.completed"}, rec.names("ok"))
	suitecheck.Equal(t, []events.Name{"ledger.admitted", "ledger.claimed", "ledger.completed"}, rec.names("bad"))
	suitecheck.Equal(t, []events.Name{"ledger.admitted", "ledger.blocked"}, rec.names("dep"))
	status := func(key string) string {
		evs := rec.events(key)
		return evs[len(evs)-1].Status
	}
	suitecheck.Equal(t, string(kvledger.StatusCompleted), status("ok"))
	suitecheck.Equal(t, string(kvledger.StatusFailed), status("bad"), "a failed Complete is completed by name, failed by status")
	suitecheck.Equal(t, string(kvledger.StatusBlocked), status("dep"))
}
