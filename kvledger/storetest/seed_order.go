package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testSeedErrorOrder: the order of checks the seed ledger promises for
// the calls that present a fence (../shared/seeds, ledger). Release and
// Complete: ErrNoKey, then ErrFenced (the caller's token is not the
// record's), then ErrNotClaimed (the record is not claimed); an owner
// that is not the claim's, with the right token on a claimed record, is
// ErrFenced last. Renew: ErrNoKey, ErrNotClaimed, ErrFenced. A refused
// call writes nothing.
func testSeedErrorOrder(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, _ := newLedger(t, newStore)
	late := t0.Add(time.Hour)

	// "pending": claimed by w at fOld, then released: pending at fOld.
	admit(t, l, "pending")
	fOld := claim(t, l, "pending", "w", t0)
	suitecheck.NoError(t, l.Release(ctx, "w", "pending", "w", fOld, t0))
	// "fresh": admitted, never claimed (its fence is the store's floor).
	admit(t, l, "fresh")
	fFresh := state(t, l, "fresh").Fence
	// "taken": w's claim taken over by w2: claimed at fTaken > fStale.
	admit(t, l, "taken")
	fStale := claim(t, l, "taken", "w", t0.Add(-2*lease))
	fTaken, err := l.Takeover(ctx, "w2", "taken", "w2", lease, t0)
	suitecheck.NoError(t, err)
	// "done": taken over, then completed by the new owner at fDone.
	admit(t, l, "done")
	fDoneOld := claim(t, l, "done", "w", t0.Add(-2*lease))
	fDone, err := l.Takeover(ctx, "w2", "done", "w2", lease, t0)
	suitecheck.NoError(t, err)
	suitecheck.NoError(t, l.Complete(ctx, "w2", "done", "w2", fDone, kvledger.StatusFailed, t0))
	// "blocked": claimed by w at fBlocked, then blocked by a failed need.
	admit(t, l, "need")
	admit(t, l, "blocked", "need")
	fBlocked := claim(t, l, "blocked", "w", t0)
	fNeed := claim(t, l, "need", "w", t0)
	suitecheck.NoError(t, l.Complete(ctx, "w", "need", "w", fNeed, kvledger.StatusFailed, t0))
	requireBlocked(t, l, "blocked", "need")

	type op struct {
		name string
		call func(key kvledger.IdempotencyKey, owner kvledger.OwnerID, f kvledger.FenceToken) error
	}
	release := op{"Release", func(k kvledger.IdempotencyKey, o kvledger.OwnerID, f kvledger.FenceToken) error {
		return l.Release(ctx, "a", k, o, f, t0)
	}}
	complete := op{"Complete", func(k kvledger.IdempotencyKey, o kvledger.OwnerID, f kvledger.FenceToken) error {
		return l.Complete(ctx, "a", k, o, f, kvledger.StatusCompleted, t0)
	}}
	completeFailed := op{"Complete(failed)", func(k kvledger.IdempotencyKey, o kvledger.OwnerID, f kvledger.FenceToken) error {
		return l.Complete(ctx, "a", k, o, f, kvledger.StatusFailed, t0)
	}}
	renew := op{"Renew", func(k kvledger.IdempotencyKey, o kvledger.OwnerID, f kvledger.FenceToken) error {
		return l.Renew(ctx, "a", k, o, f, lease, t0)
	}}
	type want struct{ fencedFirst, renew error }
	cases := []struct {
		name  string
		key   kvledger.IdempotencyKey
		owner kvledger.OwnerID
		fence kvledger.FenceToken
		want  want
	}{
		{"no record", "missing", "w", 1, want{kvledger.ErrNoKey, kvledger.ErrNoKey}},
		// Stale token on a record that is not claimed: fenced first
		// for Release and Complete, not claimed first for Renew.
		{"stale token, pending", "pending", "w", fOld - 1, want{kvledger.ErrFenced, kvledger.ErrNotClaimed}},
		{"stale token, never claimed", "fresh", "w", fFresh + 7, want{kvledger.ErrFenced, kvledger.ErrNotClaimed}},
		{"stale token, completed", "done", "w", fDoneOld, want{kvledger.ErrFenced, kvledger.ErrNotClaimed}},
		{"stale token, blocked", "blocked", "w", fBlocked - 1, want{kvledger.ErrFenced, kvledger.ErrNotClaimed}},
		// The record's current token on a record that is not claimed.
		{"current token, released", "pending", "w", fOld, want{kvledger.ErrNotClaimed, kvledger.ErrNotClaimed}},
		{"current token, never claimed", "fresh", "w", fFresh, want{kvledger.ErrNotClaimed, kvledger.ErrNotClaimed}},
		{"current token, finished", "done", "w2", fDone, want{kvledger.ErrNotClaimed, kvledger.ErrNotClaimed}},
		{"current token under another name, finished", "done", "wx", fDone, want{kvledger.ErrNotClaimed, kvledger.ErrNotClaimed}},
		{"current token, blocked", "blocked", "w", fBlocked, want{kvledger.ErrNotClaimed, kvledger.ErrNotClaimed}},
		// A claimed record: a stale token, or the right token under
		// another owner's name.
		{"stale token, claimed", "taken", "w", fStale, want{kvledger.ErrFenced, kvledger.ErrFenced}},
		{"current token under another name, claimed", "taken", "w", fTaken, want{kvledger.ErrFenced, kvledger.ErrFenced}},
	}
	before := map[kvledger.IdempotencyKey]uint64{}
	for _, k := range []kvledger.IdempotencyKey{"pending", "fresh", "taken", "done", "blocked"} {
		before[k] = state(t, l, k).Rev
	}
	for _, tc := range cases {
		for _, o := range []op{release, complete, completeFailed, renew} {
			wantErr := tc.want.fencedFirst
			if o.name == "Renew" {
				wantErr = tc.want.renew
			}
			suitecheck.ErrorIs(t, o.call(tc.key, tc.owner, tc.fence), wantErr, "%s: %s", o.name, tc.name)
		}
	}
	for k, rev := range before {
		suitecheck.Equal(t, rev, state(t, l, k).Rev, "a refused call wrote %s", k)
	}
	// The holder itself still ends its claim.
	suitecheck.NoError(t, l.Complete(ctx, "w2", "taken", "w2", fTaken, kvledger.StatusCompleted, late))
}

// testSeedCompleteRace: eight clients hold a token of one task, each
// from a takeover of the previous one's stale claim, and race to Complete
// it. The newest token wins; the seven others get ErrFenced, during the
// race and after it, and only the winner's write is stored.
func testSeedCompleteRace(t *testing.T, newStore NewStore) {
	const clients = 8
	ctx := ctxFor(t)
	store := newStore(t)
	ledgers := make([]*kvledger.Ledger, clients)
	for i := range ledgers {
		l, err := kvledger.New(store)
		suitecheck.NoError(t, err)
		ledgers[i] = l
	}
	admit(t, ledgers[0], "race")
	fences := make([]kvledger.FenceToken, clients)
	now := t0
	for i, l := range ledgers {
		owner := kvledger.OwnerID(rune('a' + i))
		var err error
		if i == 0 {
			fences[i], err = l.Claim(ctx, "w", "race", owner, lease, now)
		} else {
			fences[i], err = l.Takeover(ctx, "w", "race", owner, lease, now)
		}
		suitecheck.NoError(t, err)
		now = now.Add(2 * lease) // the claim just taken is stale for the next
	}
	errs := make([]error, clients)
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i, l := range ledgers {
		wg.Go(func() {
			<-start
			errs[i] = l.Complete(ctx, "w", "race", kvledger.OwnerID(rune('a'+i)), fences[i], kvledger.StatusCompleted, now)
		})
	}
	close(start)
	wg.Wait()
	winner := clients - 1
	for i, err := range errs {
		if i == winner {
			suitecheck.NoError(t, err, "the newest token completes")
			continue
		}
		suitecheck.ErrorIs(t, err, kvledger.ErrFenced, "client %d (fence %d) lost to fence %d", i, fences[i], fences[winner])
		// And after the race, against the finished record.
		suitecheck.ErrorIs(t, ledgers[i].Complete(ctx, "w", "race", kvledger.OwnerID(rune('a'+i)), fences[i], kvledger.StatusCompleted, now), kvledger.ErrFenced)
	}
	s := state(t, ledgers[0], "race")
	suitecheck.Equal(t, kvledger.StatusCompleted, s.Status)
	suitecheck.Equal(t, fences[winner], s.Fence)
	suitecheck.Equal(t, kvledger.OwnerID(rune('a'+winner)), s.Owner)
	if _, ok := store.(kvledger.EventLog); !ok {
		return
	}
	evs, err := ledgers[0].KeyEvents(ctxFor(t), "race")
	suitecheck.NoError(t, err)
	completed := 0
	for _, e := range evs {
		if e.Name == kvledger.CompletedEvent {
			completed++
			suitecheck.Equal(t, uint64(fences[winner]), e.Fence)
		}
	}
	suitecheck.Equal(t, 1, completed, "one completed event, the winner's")
}
