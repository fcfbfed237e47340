package storetest

import (
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

func testSnapshotRoundTrip(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	admit(t, l, "a")
	admit(t, l, "b", "a")
	admit(t, l, "c")
	admit(t, l, "d", "c")
	fa := claim(t, l, "a", "w", t0)
	claim(t, l, "c", "w", t0)
	suitecheck.NoError(t, l.Complete(ctx, "w", "a", "w", fa, kvledger.StatusFailed, t0))

	snap, err := l.Snapshot(ctx)
	suitecheck.NoError(t, err)
	suitecheck.Len(t, snap.Tasks, 4)
	data, err := kvledger.Encode(snap)
	suitecheck.NoError(t, err)
	decoded, err := kvledger.Decode(data)
	suitecheck.NoError(t, err)

	l2, _ := newLedger(t, newStore)
	suitecheck.NoError(t, l2.Restore(ctx, decoded))
	snap2, err := l2.Snapshot(ctx)
	suitecheck.NoError(t, err)
	suitecheck.Equal(t, byKey(t, snap), byKey(t, snap2))
	requireBlocked(t, l2, "b", "a")
	// The restored claim keeps working.
	_, err = l2.Claim(ctx, "w2", "c", "w2", lease, t0.Add(time.Second))
	suitecheck.ErrorIs(t, err, kvledger.ErrLeaseActive)
	// Restoring over existing records stops with ErrExists.
	suitecheck.ErrorIs(t, l2.Restore(ctx, decoded), kvledger.ErrExists)
	// A snapshot that does not validate restores nothing.
	bad := kvledger.Snapshot{Tasks: []kvledger.TaskState{{Key: "z", Status: kvledger.StatusPending}, {Key: "y", Status: "bogus"}}}
	suitecheck.ErrorIs(t, l2.Restore(ctx, bad), kvledger.ErrInvalidState)
	_, found, err := l2.State(ctx, "z")
	suitecheck.NoError(t, err)
	suitecheck.False(t, found)
}

// byKey normalises a snapshot for comparison: store-assigned fields
// (Rev, LastEvent) are cleared, times compared in UTC, fences checked
// to be at least the original.
func byKey(t *testing.T, s kvledger.Snapshot) map[kvledger.IdempotencyKey]kvledger.TaskState {
	t.Helper()
	out := map[kvledger.IdempotencyKey]kvledger.TaskState{}
	for _, ts := range s.Tasks {
		ts.Rev, ts.LastEvent, ts.Fence = 0, "", 0
		ts.LeaseUntil, ts.CreatedAt, ts.UpdatedAt = ts.LeaseUntil.UTC(), ts.CreatedAt.UTC(), ts.UpdatedAt.UTC()
		out[ts.Key] = ts
	}
	return out
}
