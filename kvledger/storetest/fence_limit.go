package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testFenceNeverWraps: a record restored at MaxFence cannot be claimed
// (a new token would wrap to zero), and one above it never enters.
func testFenceNeverWraps(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	rec := func(key kvledger.IdempotencyKey, fence kvledger.FenceToken) kvledger.TaskState {
		return kvledger.TaskState{Key: key, Status: kvledger.StatusPending, Sequence: 1, Fence: fence}
	}
	suitecheck.NoError(t, l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{
		rec("last", kvledger.MaxFence-1), rec("full", kvledger.MaxFence),
	}}))

	// One token left: it is handed out, and then there is none.
	f, err := l.Claim(ctx, "w", "last", "w", lease, t0)
	suitecheck.NoError(t, err)
	suitecheck.Equal(t, kvledger.MaxFence, f)
	_, err = l.Takeover(ctx, "w2", "last", "w2", lease, t0.Add(2*lease))
	suitecheck.ErrorIs(t, err, kvledger.ErrFenceExhausted)

	_, err = l.Claim(ctx, "w", "full", "w", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrFenceExhausted)
	suitecheck.Equal(t, kvledger.StatusPending, state(t, l, "full").Status, "the refused claim wrote nothing")

	err = l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{rec("wrap", kvledger.MaxFence+1)}})
	suitecheck.ErrorIs(t, err, kvledger.ErrFenceExhausted)
	suitecheck.ErrorIs(t, err, kvledger.ErrInvalidState)
	_, found, err := l.State(ctx, "wrap")
	suitecheck.NoError(t, err)
	suitecheck.False(t, found)
}
