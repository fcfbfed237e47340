package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testOwnerChecked: the right fence presented by an owner that does not
// hold the claim is refused with ErrFenced by Renew, Release and
// Complete, and writes nothing.
func testOwnerChecked(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, bus := newLedger(t, newStore)
	admit(t, l, "build")
	f := claim(t, l, "build", "w1", t0)
	before := state(t, l, "build")

	suitecheck.ErrorIs(t, l.Renew(ctx, "w2", "build", "w2", f, lease, t0), kvledger.ErrFenced)
	suitecheck.ErrorIs(t, l.Release(ctx, "w2", "build", "w2", f, t0), kvledger.ErrFenced)
	suitecheck.ErrorIs(t, l.Complete(ctx, "w2", "build", "w2", f, kvledger.StatusCompleted, t0), kvledger.ErrFenced)
	after := state(t, l, "build")
	suitecheck.Equal(t, before.Rev, after.Rev, "a refused owner wrote nothing")
	suitecheck.Equal(t, kvledger.OwnerID("w1"), after.Owner)

	// The holder itself still succeeds, and a record finished at the
	// caller's token is not claimed, whatever owner the caller names:
	// ErrNotClaimed for Renew, Release and Complete alike (the owner is
	// compared only on a claimed record).
	suitecheck.NoError(t, l.Complete(ctx, "w1", "build", "w1", f, kvledger.StatusCompleted, t0))
	suitecheck.ErrorIs(t, l.Complete(ctx, "w2", "build", "w2", f, kvledger.StatusFailed, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, l.Release(ctx, "w2", "build", "w2", f, t0), kvledger.ErrNotClaimed)
	suitecheck.ErrorIs(t, l.Renew(ctx, "w2", "build", "w2", f, lease, t0), kvledger.ErrNotClaimed)
	suitecheck.Equal(t, kvledger.OwnerID("w1"), state(t, l, "build").Owner)
	suitecheck.Equal(t, kvledger.StatusCompleted, state(t, l, "build").Status)
	suitecheck.Equal(t, 3, len(bus.names("build")), "admitted, claimed, completed and nothing else")
}
