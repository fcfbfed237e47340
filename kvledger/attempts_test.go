package kvledger_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Each write that ends a claim ends its attempt once, with that write's
// own error: a completion after a retry does not repeat the retry's
// error, a renewal is no new attempt, and a claim taken over is lost.
func TestAttemptsFromWrites(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w := func(rev uint64, st kvledger.Status, ev events.Name, owner string, fence, n int, errText string) kvledger.TaskState {
		return kvledger.TaskState{Key: "k", Status: st, LastEvent: ev, Owner: kvledger.OwnerID(owner),
			Fence: kvledger.FenceToken(fence), Attempts: n, MaxAttempts: 4, LastError: errText, Rev: rev, UpdatedAt: at(int(rev))}
	}
	pending, claimed := kvledger.StatusPending, kvledger.StatusClaimed
	history := []kvledger.TaskState{
		w(1, pending, kvledger.AdmittedEvent, "", 1, 0, ""),
		w(2, claimed, kvledger.ClaimedEvent, "a", 2, 1, ""),
		w(3, claimed, kvledger.RenewedEvent, "a", 2, 1, ""),
		w(4, pending, kvledger.RetriedEvent, "", 2, 1, "first"),
		w(5, claimed, kvledger.ClaimedEvent, "b", 3, 2, "first"),
		w(6, claimed, kvledger.TakenOverEvent, "c", 4, 3, "first"),
		w(7, kvledger.StatusCompleted, kvledger.CompletedEvent, "c", 4, 3, "first"),
	}
	got := kvledger.Attempts(history)
	require.Equal(t, []kvledger.Attempt{
		{N: 1, Max: 4, Owner: "a", Fence: 2, Started: at(2), Ended: at(4), Outcome: kvledger.AttemptRetried, Error: "first", StartRev: 2, EndRev: 4},
		{N: 2, Max: 4, Owner: "b", Fence: 3, Started: at(5), Ended: at(6), Outcome: kvledger.AttemptLost, StartRev: 5, EndRev: 6},
		{N: 3, Max: 4, Owner: "c", Fence: 4, Started: at(6), Ended: at(7), Outcome: kvledger.AttemptCompleted, StartRev: 6, EndRev: 7},
	}, got)

	// A release after a retry (Ledger.Release keeps the record's
	// LastError) ends its attempt with no error of its own; a runtime
	// release with its own error (GiveBack) keeps that.
	released := kvledger.Attempts([]kvledger.TaskState{history[0], history[1], history[2], history[3], history[4],
		w(6, pending, kvledger.ReleasedEvent, "", 3, 2, "first")})
	require.Equal(t, kvledger.AttemptReleased, released[1].Outcome)
	require.Empty(t, released[1].Error, "not its predecessor's error")
	givenBack := kvledger.Attempts([]kvledger.TaskState{history[0], history[1], history[2], history[3], history[4],
		w(6, pending, kvledger.ReleasedEvent, "", 3, 1, "given back: no disk")})
	require.Equal(t, "given back: no disk", givenBack[1].Error)
	// A runtime release takes its attempt back (Attempts below its
	// claim's): its error is its own even when the claim carried the
	// same text along (the same cause given back twice).
	again := w(7, claimed, kvledger.ClaimedEvent, "b", 4, 2, "given back: no disk")
	givenBackTwice := kvledger.Attempts([]kvledger.TaskState{history[0], history[1], history[2], history[3], history[4],
		w(6, pending, kvledger.ReleasedEvent, "", 3, 1, "given back: no disk"), again,
		w(8, pending, kvledger.ReleasedEvent, "", 4, 1, "given back: no disk")})
	require.Len(t, givenBackTwice, 3)
	require.Equal(t, "given back: no disk", givenBackTwice[1].Error)
	require.Equal(t, kvledger.AttemptReleased, givenBackTwice[2].Outcome)
	require.Equal(t, "given back: no disk", givenBackTwice[2].Error, "its own error, though the claim carried the same")

	// A cancel while claimed ends the attempt cancelled; a cancel of a
	// pending record is no attempt.
	cancelled := w(3, kvledger.StatusFailed, kvledger.CancelledEvent, "a", 2, 1, "stop")
	cancelled.Cancelled = true
	got = kvledger.Attempts([]kvledger.TaskState{history[0], history[1], cancelled})
	require.Len(t, got, 1)
	require.Equal(t, kvledger.AttemptCancelled, got[0].Outcome)
	require.Equal(t, "stop", got[0].Error)
	pendingCancel := w(2, kvledger.StatusFailed, kvledger.CancelledEvent, "", 1, 0, "stop")
	pendingCancel.Cancelled = true
	require.Empty(t, kvledger.Attempts([]kvledger.TaskState{history[0], pendingCancel}))

	// With only the last write kept, the attempt it ended is still shown,
	// without a start; a running claim first seen at a renewal has none
	// either.
	// A failed outcome is named ledger.completed with status failed
	// (records an earlier version wrote as ledger.failed are read so:
	// TestOldFailedWritesReadAsCompleted).
	for _, ev := range []events.Name{kvledger.CompletedEvent} {
		got = kvledger.Attempts([]kvledger.TaskState{w(9, kvledger.StatusFailed, ev, "a", 2, 4, "last")})
		require.Equal(t, []kvledger.Attempt{{N: 4, Max: 4, Owner: "a", Fence: 2, Ended: at(9), Outcome: kvledger.AttemptFailed, Error: "last", EndRev: 9}}, got, string(ev))
	}
	got = kvledger.Attempts([]kvledger.TaskState{history[2]})
	require.Equal(t, []kvledger.Attempt{{N: 1, Max: 4, Owner: "a", Fence: 2, Outcome: kvledger.AttemptRunning}}, got)
	require.Empty(t, kvledger.Attempts([]kvledger.TaskState{history[0]}))
	require.Empty(t, kvledger.Attempts(nil))
}

// KVStore.History returns the writes of the key's current record, oldest
// first, as far as the bucket keeps them; a deleted key's earlier writes
// are not the new record's.
func TestKVStoreHistoryKeepsTheCurrentRecordsWrites(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "hist", History: 64})
	require.NoError(t, err)
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: "hist"})
	require.NoError(t, err)
	l, err := kvledger.New(store)
	require.NoError(t, err)
	now := time.Now()
	_, err = l.Admit(ctx, "t", "k", 1, nil, now)
	require.NoError(t, err)
	fence, err := l.Claim(ctx, "t", "k", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "k", "w", fence, kvledger.StatusCompleted, now))
	h, err := l.History(ctx, "k")
	require.NoError(t, err)
	require.Len(t, h, 3)
	require.Equal(t, []kvledger.Status{kvledger.StatusPending, kvledger.StatusClaimed, kvledger.StatusCompleted},
		[]kvledger.Status{h[0].Status, h[1].Status, h[2].Status})
	require.Less(t, h[0].Rev, h[1].Rev)
	require.Less(t, h[1].Rev, h[2].Rev)

	require.NoError(t, l.Delete(ctx, "t", "k", now))
	h, err = l.History(ctx, "k")
	require.NoError(t, err)
	require.Empty(t, h, "a deleted record has no history")
	_, err = l.Admit(ctx, "t", "k", 1, nil, now)
	require.NoError(t, err)
	h, err = l.History(ctx, "k")
	require.NoError(t, err)
	require.Len(t, h, 1, "the earlier record's writes are not the new one's")
	require.Equal(t, kvledger.StatusPending, h[0].Status)
}

// AttemptsOf reads from a key's events the attempts Attempts reads from
// its records: the dashboard's task page shows both the timeline and the
// attempts from one read of the key's events.
func TestAttemptsOfEventsAgreesWithTheRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := func(rev uint64, st kvledger.Status, ev events.Name, owner string, fence, n int, errText string) kvledger.TaskState {
		return kvledger.TaskState{Key: "k", Status: st, LastEvent: ev, Owner: kvledger.OwnerID(owner),
			Fence: kvledger.FenceToken(fence), Attempts: n, MaxAttempts: 4, LastError: errText, Rev: rev, UpdatedAt: t0.Add(time.Duration(rev) * time.Second)}
	}
	cancelled := w(6, kvledger.StatusFailed, kvledger.CancelledEvent, "b", 3, 2, "stop")
	cancelled.Cancelled = true
	history := []kvledger.TaskState{
		w(1, kvledger.StatusPending, kvledger.AdmittedEvent, "", 1, 0, ""),
		w(2, kvledger.StatusClaimed, kvledger.ClaimedEvent, "a", 2, 1, ""),
		w(3, kvledger.StatusClaimed, kvledger.RenewedEvent, "a", 2, 1, ""),
		w(4, kvledger.StatusPending, kvledger.RetriedEvent, "", 2, 1, "first"),
		w(5, kvledger.StatusClaimed, kvledger.ClaimedEvent, "b", 3, 2, "first"),
		cancelled,
	}
	evs := []events.Event{{Name: kvledger.DeletedEvent, Source: "b", Key: "k"}} // an earlier record's end
	for _, s := range history {
		evs = append(evs, kvledger.EventOf("b", s))
	}
	want := kvledger.Attempts(history)
	require.Len(t, want, 2)
	require.Equal(t, kvledger.AttemptCancelled, want[1].Outcome)
	require.Equal(t, want, kvledger.AttemptsOf(evs))

	// Read back from a bucket: a claim, a completion, a deletion, and a
	// new record of the same key claimed and cancelled.
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: "histev"})
	require.NoError(t, err)
	l, err := kvledger.New(store)
	require.NoError(t, err)
	now := time.Now()
	_, err = l.Admit(ctx, "t", "k", 1, nil, now)
	require.NoError(t, err)
	fence, err := l.Claim(ctx, "t", "k", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "k", "w", fence, kvledger.StatusCompleted, now))
	require.NoError(t, l.Delete(ctx, "t", "k", now))
	_, err = l.Admit(ctx, "t", "k", 1, nil, now)
	require.NoError(t, err)
	fence, err = l.Claim(ctx, "t", "k", "w2", time.Minute, now)
	require.NoError(t, err)
	_, err = l.Cancel(ctx, "t", "k", "stop", now)
	require.NoError(t, err)
	// The request keeps the claim; its owner's end makes it cancelled.
	require.NoError(t, l.Complete(ctx, "t", "k", "w2", fence, kvledger.StatusCompleted, now))
	h, err := l.History(ctx, "k")
	require.NoError(t, err)
	kept, err := l.KeyEvents(ctx, "k")
	require.NoError(t, err)
	want = kvledger.Attempts(h)
	require.Len(t, want, 1)
	require.Equal(t, kvledger.AttemptCancelled, want[0].Outcome)
	require.Equal(t, want, kvledger.AttemptsOf(kept))
}

// Both stores give a task's attempts alike from its events, and the
// KVStore from its writes too: a release by the runtime (ClaimIfReady's
// counted claim, a GiveBack's uncounted outcome) shows its own error
// also when it repeats the one before it, and a Ledger.Release, which
// keeps the record's LastError, shows none.
func TestAttemptsOfReleasesOnBothStores(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "rel", History: 64})
	require.NoError(t, err)
	kv := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "rel"})
	const gave = "given back: disk full"
	for name, store := range map[string]kvledger.Store{"mem": kvledger.NewMemStore(), "kv": kv} {
		l, err := kvledger.New(store)
		require.NoError(t, err)
		now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
		tick := func() time.Time { now = now.Add(time.Second); return now }
		_, err = l.Admit(ctx, "t", "k", 1, nil, tick())
		require.NoError(t, err)
		for range 2 {
			rec, err := l.ClaimIfReady(ctx, "t", "k", "w", time.Minute, tick())
			require.NoError(t, err, name)
			_, err = l.Finish(ctx, "t", "k", "w", rec.Fence, kvledger.Outcome{Status: kvledger.StatusPending, Error: gave, Uncount: true, RunAt: now}, tick())
			require.NoError(t, err, name)
		}
		f, err := l.Claim(ctx, "t", "k", "w", time.Minute, tick())
		require.NoError(t, err, name)
		require.NoError(t, l.Release(ctx, "t", "k", "w", f, tick()), name)
		rec, err := l.ClaimIfReady(ctx, "t", "k", "w", time.Minute, tick())
		require.NoError(t, err, name)
		_, err = l.Finish(ctx, "t", "k", "w", rec.Fence, kvledger.Outcome{Status: kvledger.StatusCompleted}, tick())
		require.NoError(t, err, name)

		evs, err := l.KeyEvents(ctx, "k")
		require.NoError(t, err, name)
		atts := kvledger.AttemptsOf(evs)
		var got [][2]string
		for _, a := range atts {
			got = append(got, [2]string{string(a.Outcome), a.Error})
		}
		require.Equal(t, [][2]string{{"released", gave}, {"released", gave}, {"released", ""}, {"completed", ""}}, got, name)
		if name == "kv" {
			h, err := l.History(ctx, "k")
			require.NoError(t, err)
			require.Equal(t, atts, kvledger.Attempts(h))
		}
	}
}
