package storetest

import (
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

func testAdmit(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)

	ok, err := l.Admit(ctx, "alice", "a", 5, "payload", t0)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	s := state(t, l, "a")
	suitecheck.Equal(t, kvledger.StatusPending, s.Status)
	suitecheck.Equal(t, kvledger.Sequence(5), s.Sequence)
	suitecheck.Equal(t, "payload", s.Task)
	suitecheck.Equal(t, kvledger.Actor("alice"), s.CreatedBy)
	suitecheck.Equal(t, kvledger.Actor("alice"), s.UpdatedBy)
	suitecheck.True(t, s.CreatedAt.Equal(t0))

	for _, seq := range []kvledger.Sequence{5, 4, 0} {
		ok, err = l.Admit(ctx, "bob", "a", seq, "other", t0)
		suitecheck.NoError(t, err, "a duplicate is not an error")
		suitecheck.False(t, ok, "sequence %d at or below the stored one", seq)
	}
	suitecheck.Equal(t, "payload", state(t, l, "a").Task)
	// Even with a payload a store could not encode: the stored record
	// decides first.
	ok, err = l.Admit(ctx, "bob", "a", 1, func() {}, t0)
	suitecheck.NoError(t, err, "a duplicate is not an error")
	suitecheck.False(t, ok)

	// A terminal record is never rebased.
	admit(t, l, "done")
	f := claim(t, l, "done", "w", t0)
	suitecheck.NoError(t, l.Complete(ctx, "w", "done", "w", f, kvledger.StatusCompleted, t0))
	ok, err = l.Admit(ctx, "bob", "done", 99, "again", t0)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok)
	suitecheck.Equal(t, kvledger.StatusCompleted, state(t, l, "done").Status)

	// Validation before any write.
	ok, err = l.Admit(ctx, "bob", "self", 1, nil, t0, "self")
	suitecheck.ErrorIs(t, err, kvledger.ErrInvalidState)
	suitecheck.False(t, ok)
	_, found, err := l.State(ctx, "self")
	suitecheck.NoError(t, err)
	suitecheck.False(t, found)
	_, err = l.Admit(ctx, "bob", "", 1, nil, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrInvalidState)

	// Blocked reports false for a missing and for a pending key.
	_, blocked, err := l.Blocked(ctx, "nope")
	suitecheck.NoError(t, err)
	suitecheck.False(t, blocked)
	_, blocked, err = l.Blocked(ctx, "a")
	suitecheck.NoError(t, err)
	suitecheck.False(t, blocked)
}

func testRebase(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	ok, err := l.Admit(ctx, "alice", "r", 1, "v1", t0)
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	f1 := claim(t, l, "r", "w1", t0)

	later := t0.Add(time.Minute)
	ok, err = l.Admit(ctx, "bob", "r", 2, "v2", later, "n")
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok, "a higher sequence rebases a claimed record")
	s := state(t, l, "r")
	suitecheck.Equal(t, kvledger.StatusPending, s.Status)
	suitecheck.Equal(t, kvledger.Sequence(2), s.Sequence)
	suitecheck.Equal(t, "v2", s.Task)
	suitecheck.Equal(t, []kvledger.IdempotencyKey{"n"}, s.Needs)
	suitecheck.Empty(t, s.Owner)
	suitecheck.True(t, s.LeaseUntil.IsZero())
	suitecheck.Equal(t, f1, s.Fence, "fence carries over")
	suitecheck.Equal(t, kvledger.Actor("alice"), s.CreatedBy)
	suitecheck.True(t, s.CreatedAt.Equal(t0))
	suitecheck.Equal(t, kvledger.Actor("bob"), s.UpdatedBy)
	suitecheck.True(t, s.UpdatedAt.Equal(later))

	// The dispossessed owner can no longer finish; the next claim outbids it.
	suitecheck.ErrorIs(t, l.Complete(ctx, "w1", "r", "w1", f1, kvledger.StatusCompleted, later), kvledger.ErrNotClaimed)
	f2 := claim(t, l, "r", "w2", later)
	suitecheck.Greater(t, f2, f1)
	suitecheck.ErrorIs(t, l.Complete(ctx, "w1", "r", "w1", f1, kvledger.StatusCompleted, later), kvledger.ErrFenced)
}

func testLateAdmission(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	admit(t, l, "p")
	f := claim(t, l, "p", "w", t0)
	suitecheck.NoError(t, l.Complete(ctx, "w", "p", "w", f, kvledger.StatusFailed, t0))

	ok, err := l.Admit(ctx, "late", "c", 1, nil, t0, "other", "p")
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok, "a late dependent is admitted")
	requireBlocked(t, l, "c", "p")

	ok, err = l.Admit(ctx, "late", "gc", 1, nil, t0, "c")
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	requireBlocked(t, l, "gc", "c")
	_, err = l.Claim(ctx, "w", "gc", "w", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed)

	// Several blocking needs: the first in Needs order is named.
	ok, err = l.Admit(ctx, "late", "multi", 1, nil, t0, "other", "gc", "p")
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	requireBlocked(t, l, "multi", "gc")

	// A rebase onto a failed need lands blocked too.
	admit(t, l, "rb")
	ok, err = l.Admit(ctx, "late", "rb", 2, nil, t0, "p")
	suitecheck.NoError(t, err)
	suitecheck.True(t, ok)
	requireBlocked(t, l, "rb", "p")
	ok, err = l.Admit(ctx, "late", "rb", 3, nil, t0)
	suitecheck.NoError(t, err)
	suitecheck.False(t, ok, "blocked is final")
}

func testTransitiveBlocking(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	// a <- b <- c, a <- d, (b, d) <- e, and x independent; b is claimed,
	// m completed (needs a) with n needing m.
	admit(t, l, "a")
	admit(t, l, "b", "a")
	admit(t, l, "c", "b")
	admit(t, l, "d", "a")
	admit(t, l, "e", "b", "d")
	admit(t, l, "x")
	admit(t, l, "m", "a")
	admit(t, l, "n", "m")
	fa := claim(t, l, "a", "wa", t0)
	fb := claim(t, l, "b", "wb", t0)
	fm := claim(t, l, "m", "wm", t0)
	suitecheck.NoError(t, l.Complete(ctx, "wm", "m", "wm", fm, kvledger.StatusCompleted, t0))

	suitecheck.NoError(t, l.Complete(ctx, "wa", "a", "wa", fa, kvledger.StatusFailed, t0))
	for _, k := range []kvledger.IdempotencyKey{"b", "c", "d", "e", "n"} {
		requireBlocked(t, l, k, "a")
	}
	suitecheck.Equal(t, kvledger.StatusPending, state(t, l, "x").Status)
	suitecheck.Equal(t, kvledger.StatusCompleted, state(t, l, "m").Status, "a finished record stays finished")
	suitecheck.Equal(t, kvledger.StatusFailed, state(t, l, "a").Status)
	// The blocked claimant cannot finish.
	suitecheck.ErrorIs(t, l.Complete(ctx, "wb", "b", "wb", fb, kvledger.StatusCompleted, t0), kvledger.ErrNotClaimed)
	_, err := l.Claim(ctx, "w", "c", "w", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed)
}

func testClaimClosure(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	// A state the failure walk never saw (restored): a failed, b and c
	// pending behind it.
	claimed := kvledger.TaskState{Key: "t", Status: kvledger.StatusClaimed, Sequence: 1, Owner: "old", Fence: 3, LeaseUntil: t0, Needs: []kvledger.IdempotencyKey{"c"}}
	suitecheck.NoError(t, l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{
		{Key: "a", Status: kvledger.StatusFailed, Sequence: 1, Fence: 1},
		{Key: "b", Status: kvledger.StatusPending, Sequence: 1, Needs: []kvledger.IdempotencyKey{"a"}},
		{Key: "c", Status: kvledger.StatusPending, Sequence: 1, Needs: []kvledger.IdempotencyKey{"missing", "b"}},
		{Key: "ok", Status: kvledger.StatusPending, Sequence: 1, Needs: []kvledger.IdempotencyKey{"missing"}},
		claimed,
	}}))
	_, err := l.Claim(ctx, "w", "c", "w", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed)
	requireBlocked(t, l, "c", "a")
	_, err = l.Takeover(ctx, "w", "t", "w", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed)
	requireBlocked(t, l, "t", "c")
	// A need without a record blocks nothing.
	claim(t, l, "ok", "w", t0)
}

func testFencing(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	admit(t, l, "f")
	f1 := claim(t, l, "f", "w1", t0)
	suitecheck.NoError(t, l.Renew(ctx, "w1", "f", "w1", f1, lease, t0.Add(time.Second)))
	suitecheck.True(t, state(t, l, "f").LeaseUntil.Equal(t0.Add(time.Second+lease)))

	stale := t0.Add(time.Hour)
	f2, err := l.Takeover(ctx, "w2", "f", "w2", lease, stale)
	suitecheck.NoError(t, err)
	suitecheck.Greater(t, f2, f1)
	suitecheck.ErrorIs(t, l.Renew(ctx, "w1", "f", "w1", f1, lease, stale), kvledger.ErrFenced)
	suitecheck.ErrorIs(t, l.Release(ctx, "w1", "f", "w1", f1, stale), kvledger.ErrFenced)
	suitecheck.ErrorIs(t, l.Complete(ctx, "w1", "f", "w1", f1, kvledger.StatusCompleted, stale), kvledger.ErrFenced)
	s := state(t, l, "f")
	suitecheck.Equal(t, kvledger.OwnerID("w2"), s.Owner)
	suitecheck.Equal(t, f2, s.Fence)

	// Release keeps the fence; the next claim outbids everyone.
	suitecheck.NoError(t, l.Release(ctx, "w2", "f", "w2", f2, stale))
	s = state(t, l, "f")
	suitecheck.Equal(t, kvledger.StatusPending, s.Status)
	suitecheck.Empty(t, s.Owner)
	suitecheck.Equal(t, f2, s.Fence)
	suitecheck.ErrorIs(t, l.Release(ctx, "w2", "f", "w2", f2, stale), kvledger.ErrNotClaimed)
	f3 := claim(t, l, "f", "w3", stale)
	suitecheck.Greater(t, f3, f2)
	suitecheck.NoError(t, l.Complete(ctx, "w3", "f", "w3", f3, kvledger.StatusCompleted, stale))
	suitecheck.ErrorIs(t, l.Complete(ctx, "w3", "f", "w3", f3, kvledger.StatusCompleted, stale), kvledger.ErrNotClaimed, "a second Complete never rewrites")
	s = state(t, l, "f")
	suitecheck.Equal(t, kvledger.StatusCompleted, s.Status)
	suitecheck.Equal(t, kvledger.OwnerID("w3"), s.Owner)
}

func testTakeover(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	admit(t, l, "t")
	_, err := l.Takeover(ctx, "w", "t", "w", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed, "takeover never claims a pending record")
	f1 := claim(t, l, "t", "w1", t0)
	_, err = l.Takeover(ctx, "w2", "t", "w2", lease, t0.Add(lease-time.Nanosecond))
	suitecheck.ErrorIs(t, err, kvledger.ErrNotStale)
	_, err = l.Claim(ctx, "w2", "t", "w2", lease, t0.Add(lease-time.Nanosecond))
	suitecheck.ErrorIs(t, err, kvledger.ErrLeaseActive)
	_, err = l.Claim(ctx, "w1", "t", "w1", lease, t0)
	suitecheck.ErrorIs(t, err, kvledger.ErrLeaseActive, "the holder renews, it does not re-claim")
	f2, err := l.Takeover(ctx, "w2", "t", "w2", lease, t0.Add(lease))
	suitecheck.NoError(t, err, "stale exactly at LeaseUntil")
	suitecheck.Equal(t, f1+1, f2)
	// Claim also takes a stale claim.
	f3, err := l.Claim(ctx, "w3", "t", "w3", lease, t0.Add(2*lease))
	suitecheck.NoError(t, err)
	suitecheck.Equal(t, f2+1, f3)
	suitecheck.NoError(t, l.Complete(ctx, "w3", "t", "w3", f3, kvledger.StatusFailed, t0.Add(2*lease)))
	_, err = l.Takeover(ctx, "w4", "t", "w4", lease, t0.Add(time.Hour))
	suitecheck.ErrorIs(t, err, kvledger.ErrNotClaimed)
}
