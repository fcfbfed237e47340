package storetest

import (
	"testing"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testStaleOwner: two Ledgers share one store. What the first wrote last
// is out of date once the second writes; the first's Renew, Release and
// Complete must still judge the stored record, in the seed ledger's
// order (testSeedErrorOrder), and every write still publishes its event
// once.
func testStaleOwner(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	store := newStore(t)
	a, err := kvledger.New(store)
	suitecheck.NoError(t, err)
	b, err := kvledger.New(store)
	suitecheck.NoError(t, err)
	bus := &recorder{t: t, l: a}
	late := t0.Add(time.Hour)

	// Taken over by b: a's token is fenced for every owner operation.
	admit(t, a, "k")
	f1 := claim(t, a, "k", "wa", t0)
	f2, err := b.Takeover(ctx, "wb", "k", "wb", lease, late)
	suitecheck.NoError(t, err)
	suitecheck.ErrorIs(t, a.Renew(ctx, "wa", "k", "wa", f1, lease, late), kvledger.ErrFenced)
	suitecheck.ErrorIs(t, a.Release(ctx, "wa", "k", "wa", f1, late), kvledger.ErrFenced)
	suitecheck.ErrorIs(t, a.Complete(ctx, "wa", "k", "wa", f1, kvledger.StatusCompleted, late), kvledger.ErrFenced)
	// b renews through a: a sees the renewed record, not its own claim.
	suitecheck.NoError(t, a.Renew(ctx, "wb", "k", "wb", f2, lease, late))
	suitecheck.NoError(t, b.Complete(ctx, "wb", "k", "wb", f2, kvledger.StatusCompleted, late))
	suitecheck.ErrorIs(t, a.Complete(ctx, "wb", "k", "wb", f2, kvledger.StatusCompleted, late), kvledger.ErrNotClaimed)
	suitecheck.Equal(t, kvledger.StatusCompleted, state(t, a, "k").Status)

	// Rebased by b (same fence, record pending): a's token is still the
	// record's, and the record is no longer claimed.
	admit(t, a, "r")
	f := claim(t, a, "r", "wa", t0)
	ok, err := b.Admit(ctx, "admin", "r", 2, "v2", t0)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	suitecheck.ErrorIs(t, a.Renew(ctx, "wa", "r", "wa", f, lease, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, a.Complete(ctx, "wa", "r", "wa", f, kvledger.StatusCompleted, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, a.Release(ctx, "wa", "r", "wa", f, t0), kvledger.ErrNotClaimed)

	// Blocked by b's failure walk while a holds it.
	admit(t, a, "p")
	admit(t, a, "c", "p")
	fc := claim(t, a, "c", "wa", t0)
	fp := claim(t, b, "p", "wb", t0)
	suitecheck.NoError(t, b.Complete(ctx, "wb", "p", "wb", fp, kvledger.StatusFailed, t0))
	requireBlocked(t, a, "c", "p")
	suitecheck.ErrorIs(t, a.Complete(ctx, "wa", "c", "wa", fc, kvledger.StatusCompleted, t0), kvledger.ErrNotClaimed)

	// Finished by b under a's claim: to another owner with that fence,
	// a says not claimed, not fenced (what a remembers of its claim must
	// not decide an error; issue 25 item 27).
	admit(t, a, "d")
	fd := claim(t, a, "d", "wa", t0)
	suitecheck.NoError(t, b.Complete(ctx, "wa", "d", "wa", fd, kvledger.StatusCompleted, t0))
	suitecheck.ErrorIs(t, a.Release(ctx, "wx", "d", "wx", fd, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, a.Renew(ctx, "wx", "d", "wx", fd, lease, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, a.Complete(ctx, "wx", "d", "wx", fd, kvledger.StatusFailed, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, a.Release(ctx, "wa", "d", "wa", fd, t0), kvledger.ErrNotClaimed)
	suitecheck.Equal(t, kvledger.StatusCompleted, state(t, a, "d").Status)

	if _, ok := store.(kvledger.EventLog); !ok {
		return // the rest reads the store's event log
	}
	suitecheck.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.TakenOverEvent,
		kvledger.RenewedEvent, kvledger.CompletedEvent}, bus.names("k"))
	suitecheck.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.AdmittedEvent}, bus.names("r"))
	suitecheck.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.BlockedEvent}, bus.names("c"))
}
