package storetest

import (
	"testing"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

// testRevisions checks the Store's Rev rules (see kvledger.Store): a
// Swapper reports the Rev it stored; a store without Swapper starts at 0
// and adds exactly 1 per write. Writes of two keys are interleaved, so a
// store-wide counter behind a plain CompareAndSwap is caught. Through a
// Ledger, every event carries the revision of the record it describes,
// and no write's event comes out twice.
func testRevisions(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	s := newStore(t)
	sw, isSwapper := s.(kvledger.Swapper)
	write := func(key kvledger.IdempotencyKey, old, next kvledger.TaskState) kvledger.TaskState {
		t.Helper()
		var (
			stored kvledger.TaskState
			ok     bool
			err    error
		)
		if isSwapper {
			stored, ok, err = sw.Swap(ctx, key, old, next)
		} else {
			ok, err = s.CompareAndSwap(ctx, key, old, next)
		}
		suitecheck.NoError(t, err)
		suitecheck.True(t, ok, "write %s", key)
		got, found, err := s.Load(ctx, key)
		suitecheck.NoError(t, err)
		suitecheck.True(t, found)
		switch {
		case isSwapper:
			suitecheck.Equal(t, got.Rev, stored.Rev, "%s: Swap must report the Rev it stored", key)
		case old.Key == "":
			suitecheck.Zero(t, got.Rev, "%s: a store without Swapper must insert at Rev 0", key)
		default:
			suitecheck.Equal(t, old.Rev+1, got.Rev, "%s: a store without Swapper must add exactly 1 per write", key)
		}
		if old.Key != "" {
			suitecheck.Greater(t, got.Rev, old.Rev, "%s: Rev must grow", key)
		}
		return got
	}
	rec := func(key kvledger.IdempotencyKey, seq kvledger.Sequence) kvledger.TaskState {
		return kvledger.TaskState{Key: key, Status: kvledger.StatusPending, Sequence: seq, CreatedAt: t0, UpdatedAt: t0}
	}
	a := write("ra", kvledger.TaskState{}, rec("ra", 1))
	b := write("rb", kvledger.TaskState{}, rec("rb", 1))
	for seq := kvledger.Sequence(2); seq < 5; seq++ {
		a = write("ra", a, rec("ra", seq))
		b = write("rb", b, rec("rb", seq))
	}

	// Through a Ledger: interleaved writes of two keys.
	l, bus := newLedger(t, newStore)
	admit(t, l, "x")
	admit(t, l, "y")
	fx := claim(t, l, "x", "w", t0)
	fy := claim(t, l, "y", "w", t0)
	suitecheck.NoError(t, l.Renew(ctx, "w", "x", "w", fx, lease, t0))
	suitecheck.NoError(t, l.Renew(ctx, "w", "y", "w", fy, lease, t0))
	suitecheck.NoError(t, l.Complete(ctx, "w", "x", "w", fx, kvledger.StatusCompleted, t0))
	suitecheck.NoError(t, l.Complete(ctx, "w", "y", "w", fy, kvledger.StatusCompleted, t0))
	want := []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.RenewedEvent, kvledger.CompletedEvent}
	for _, k := range []kvledger.IdempotencyKey{"x", "y"} {
		suitecheck.Equal(t, want, bus.names(string(k)), "%s: each write's event once", k)
		var last uint64
		for _, e := range bus.events(string(k)) {
			last = e.Revision
		}
		suitecheck.Equal(t, state(t, l, k).Rev, last, "%s: the last event names the stored revision", k)
	}
}
