package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testCancelOfAClaim checks Cancel of a claimed record: the claim stays
// (owner, fence; phase cancelling) and no one else can claim or reopen
// the task while it lives; whatever ends the claim then ends the task
// cancelled and blocks its dependents: its owner's Complete or Release,
// or a takeover once the claim ended, which runs nothing.
func testCancelOfAClaim(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, err := kvledger.New(newStore(t))
	suitecheck.NoError(t, err)
	rec := &recorder{t: t, l: l}
	for _, k := range []kvledger.IdempotencyKey{"done", "given", "dead"} {
		_, err = l.Admit(ctx, "t", k, 1, nil, t0)
		suitecheck.NoError(t, err)
		_, err = l.Admit(ctx, "t", "dep-"+k, 1, nil, t0, k)
		suitecheck.NoError(t, err)
	}
	cancel := func(k kvledger.IdempotencyKey) kvledger.FenceToken {
		t.Helper()
		f, err := l.Claim(ctx, "t", k, "w", lease, t0)
		suitecheck.NoError(t, err)
		asked, err := l.Cancel(ctx, "ops", k, "stop "+string(k), t0)
		suitecheck.NoError(t, err)
		suitecheck.Equal(t, kvledger.PhaseCancelling, asked.Phase(t0))
		suitecheck.Equal(t, kvledger.OwnerID("w"), asked.Owner)
		suitecheck.Equal(t, f, asked.Fence)
		again, err := l.Cancel(ctx, "ops", k, "", t0)
		suitecheck.NoError(t, err)
		suitecheck.Equal(t, asked.Rev, again.Rev, "a second Cancel writes nothing")
		_, err = l.Reopen(ctx, "ops", k, t0)
		suitecheck.ErrorIs(t, err, kvledger.ErrNotFailed, "no reopen while the claim lives")
		_, err = l.Claim(ctx, "t", k, "x", lease, t0)
		suitecheck.ErrorIs(t, err, kvledger.ErrLeaseActive, "no claim while the claim lives")
		return f
	}
	ended := func(k kvledger.IdempotencyKey) kvledger.TaskState {
		t.Helper()
		s, found, err := l.State(ctx, k)
		suitecheck.NoError(t, err)
		suitecheck.True(t, found)
		suitecheck.Equal(t, kvledger.PhaseCancelled, s.Phase(t0))
		suitecheck.Equal(t, "stop "+string(k), s.LastError)
		suitecheck.Equal(t, kvledger.CancelledEvent, s.LastEvent)
		d, _, err := l.State(ctx, "dep-"+k)
		suitecheck.NoError(t, err)
		suitecheck.Equal(t, kvledger.StatusBlocked, d.Status, "its dependent is blocked")
		return s
	}

	f := cancel("done")
	suitecheck.NoError(t, l.Complete(ctx, "t", "done", "w", f, kvledger.StatusCompleted, t0))
	ended("done")
	suitecheck.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.CancelRequestedEvent,
		kvledger.CancelledEvent}, rec.names("done"))

	f = cancel("given")
	suitecheck.NoError(t, l.Release(ctx, "t", "given", "w", f, t0))
	ended("given")

	f = cancel("dead")
	_, err = l.Takeover(ctx, "t", "dead", "x", lease, t0.Add(2*lease))
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed, "a takeover of a cancelled claim ends it")
	s := ended("dead")
	suitecheck.Greater(t, s.Fence, f, "its claimant is fenced")
	suitecheck.Equal(t, kvledger.OwnerID("x"), s.Owner)
	_, err = l.Reopen(ctx, "ops", "dead", t0)
	suitecheck.NoError(t, err, "reopened once cancelled")
}
