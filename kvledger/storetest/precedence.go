package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testPrecedence checks, for every operation, which error wins when
// several conditions fail at once.
func testPrecedence(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	later := t0.Add(time.Hour)
	admit(t, l, "pending")
	admit(t, l, "live")
	fLive := claim(t, l, "live", "w", t0) // live until t0+lease
	admit(t, l, "stale")
	fStale := claim(t, l, "stale", "w", t0.Add(-2*lease)) // stale at t0
	admit(t, l, "done")
	fDone := claim(t, l, "done", "w", t0)
	suitecheck.NoError(t, l.Complete(ctx, "w", "done", "w", fDone, kvledger.StatusCompleted, t0))
	// "blockedclaim" is claimed (stale) and needs "failed".
	admit(t, l, "failed")
	admit(t, l, "blockedclaim", "failed")
	claim(t, l, "blockedclaim", "w", t0.Add(-2*lease))
	fFailed := claim(t, l, "failed", "w", t0)
	_ = fStale

	type call func(ctx context.Context) error
	claimOp := func(key kvledger.IdempotencyKey, owner kvledger.OwnerID, lease time.Duration, now time.Time) call {
		return func(ctx context.Context) error { _, err := l.Claim(ctx, "a", key, owner, lease, now); return err }
	}
	takeoverOp := func(key kvledger.IdempotencyKey, owner kvledger.OwnerID, lease time.Duration, now time.Time) call {
		return func(ctx context.Context) error { _, err := l.Takeover(ctx, "a", key, owner, lease, now); return err }
	}
	renewOp := func(key kvledger.IdempotencyKey, fence kvledger.FenceToken, lease time.Duration) call {
		return func(ctx context.Context) error { return l.Renew(ctx, "a", key, "w", fence, lease, t0) }
	}
	releaseOp := func(key kvledger.IdempotencyKey, fence kvledger.FenceToken) call {
		return func(ctx context.Context) error { return l.Release(ctx, "a", key, "w", fence, t0) }
	}
	completeOp := func(key kvledger.IdempotencyKey, fence kvledger.FenceToken, st kvledger.Status) call {
		return func(ctx context.Context) error { return l.Complete(ctx, "a", key, "w", fence, st, t0) }
	}
	cases := []struct {
		name string
		call call
		want error
	}{
		// Claim: owner, lease, key, live lease, status, closure.
		{"claim empty owner beats bad lease", claimOp("missing", "", 0, t0), kvledger.ErrEmptyOwner},
		{"claim bad lease beats missing key", claimOp("missing", "w", -time.Second, t0), kvledger.ErrInvalidLease},
		{"claim missing key", claimOp("missing", "w", lease, t0), kvledger.ErrNoKey},
		{"claim live lease", claimOp("live", "x", lease, t0), kvledger.ErrLeaseActive},
		{"claim terminal", claimOp("done", "x", lease, later), kvledger.ErrNotClaimed},
		// Takeover: owner, lease, key, status, staleness, closure.
		{"takeover empty owner beats bad lease", takeoverOp("missing", "", 0, t0), kvledger.ErrEmptyOwner},
		{"takeover bad lease beats missing key", takeoverOp("missing", "w", 0, t0), kvledger.ErrInvalidLease},
		{"takeover missing key", takeoverOp("missing", "w", lease, t0), kvledger.ErrNoKey},
		{"takeover pending", takeoverOp("pending", "w", lease, t0), kvledger.ErrNotClaimed},
		{"takeover live", takeoverOp("live", "x", lease, t0), kvledger.ErrNotStale},
		// Renew: lease, key, status, fence.
		{"renew bad lease beats missing key", renewOp("missing", 1, 0), kvledger.ErrInvalidLease},
		{"renew missing key", renewOp("missing", 1, lease), kvledger.ErrNoKey},
		{"renew status beats fence", renewOp("pending", 999, lease), kvledger.ErrNotClaimed},
		{"renew fence", renewOp("live", fLive+1, lease), kvledger.ErrFenced},
		// Release: key, fence, status (the seed ledger's order, as for
		// Complete; Renew checks status before fence).
		{"release missing key", releaseOp("missing", 1), kvledger.ErrNoKey},
		{"release fence beats status", releaseOp("pending", 999), kvledger.ErrFenced},
		{"release status", releaseOp("done", fDone), kvledger.ErrNotClaimed},
		{"release fence", releaseOp("live", fLive+1), kvledger.ErrFenced},
		// Complete: status argument, key, fence, record status.
		{"complete bad status beats missing key", completeOp("missing", 1, kvledger.StatusBlocked), kvledger.ErrUnknownStatus},
		{"complete pending status argument", completeOp("live", fLive, kvledger.StatusPending), kvledger.ErrUnknownStatus},
		{"complete missing key", completeOp("missing", 1, kvledger.StatusCompleted), kvledger.ErrNoKey},
		{"complete fence beats status", completeOp("done", fDone+1, kvledger.StatusCompleted), kvledger.ErrFenced},
		{"complete fence", completeOp("live", fLive+1, kvledger.StatusCompleted), kvledger.ErrFenced},
		{"complete terminal", completeOp("done", fDone, kvledger.StatusFailed), kvledger.ErrNotClaimed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			suitecheck.ErrorIs(t, tc.call(ctx), tc.want)
		})
	}
	// The closure check comes last: after the lease checks.
	suitecheck.NoError(t, l.Complete(ctx, "w", "failed", "w", fFailed, kvledger.StatusFailed, t0))
	// The walk blocked blockedclaim; a live claim on a blocked record
	// would report ErrLeaseActive first, but blocking drops the lease.
	_, err := l.Claim(ctx, "a", "blockedclaim", "x", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed)
	requireBlocked(t, l, "blockedclaim", "failed")
	// Nothing above wrote: the untouched records are as they were.
	suitecheck.Equal(t, kvledger.StatusPending, state(t, l, "pending").Status)
	suitecheck.Equal(t, fLive, state(t, l, "live").Fence)
}
