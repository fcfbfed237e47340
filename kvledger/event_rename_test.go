package kvledger_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A failed Complete written by an earlier version (named ledger.failed in
// its header and its record, and without a status header) reads as the
// same write does today: CompletedEvent with status failed, through the
// record, the key's events, its attempts and a durable consumer's filter
// on today's name and status. A filter on the old name is refused.
func TestOldFailedWritesReadAsCompleted(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "oldnames"})
	l, err := kvledger.New(store)
	require.NoError(t, err)
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	_, err = l.Admit(ctx, "a", "old", 1, nil, now)
	require.NoError(t, err)
	f, err := l.Claim(ctx, "w", "old", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "old", "w", f, kvledger.StatusFailed, now))

	// Rewrite the failure as the earlier version stored it.
	src := store.EventSource()
	st, err := n.JS.Stream(ctx, src.Stream)
	require.NoError(t, err)
	last, err := st.GetLastMsgForSubject(ctx, src.KeySubject("old"))
	require.NoError(t, err)
	require.Equal(t, "failed", last.Header.Get(kvledger.StatusHeader))
	old := bytes.Replace(last.Data, []byte(`"ledger.completed"`), []byte(`"ledger.failed"`), 1)
	require.NotEqual(t, last.Data, old)
	_, err = n.JS.PublishMsg(ctx, &nats.Msg{Subject: last.Subject, Data: old, Header: nats.Header{
		kvledger.EventHeader:                []string{"ledger.failed"},
		jetstream.ExpectedLastSubjSeqHeader: []string{strconv.FormatUint(last.Sequence, 10)},
	}})
	require.NoError(t, err)

	s, found, err := l.State(ctx, "old")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, kvledger.CompletedEvent, s.LastEvent)
	require.Equal(t, kvledger.StatusFailed, s.Status)
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.CompletedEvent, kvledger.CompletedEvent},
		keyEvents(t, l, "old"))
	history, err := l.History(ctx, "old")
	require.NoError(t, err)
	attempts := kvledger.Attempts(history)
	require.Len(t, attempts, 1)
	require.Equal(t, kvledger.AttemptFailed, attempts[0].Outcome)
	evs, err := l.KeyEvents(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, attempts, kvledger.AttemptsOf(evs), "the events, the old failure with them, give the same attempt")

	fails := newEventLog()
	d, err := events.SubscribeDurable(ctx, n.JS, src, events.DurableConfig{Durable: "fails",
		Filter: events.Filter{Names: []events.Name{kvledger.CompletedEvent}, Statuses: []string{"failed"}}},
		fails.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	for _, rev := range []uint64{last.Sequence, last.Sequence + 1} {
		e := natstest.Recv(t, fails.c, 10*time.Second, "failure")
		require.Equal(t, rev, e.Revision)
		require.Equal(t, kvledger.CompletedEvent, e.Name)
		require.Equal(t, "failed", e.Status)
	}
	require.NoError(t, d.Close())

	_, err = events.SubscribeDurable(ctx, n.JS, src, events.DurableConfig{Durable: "oldname",
		Filter: events.Filter{Names: []events.Name{"ledger.failed"}}}, fails.handle, nil)
	require.ErrorIs(t, err, events.ErrInvalidConfig)
	require.ErrorContains(t, err, `"ledger.completed"`)
}

// FuzzDecodeEvent: whatever a stored write holds (its name and status
// headers, its value), DecodeEvent returns the event of the write's key
// and revision, or skips it, or fails, and never panics; no decoded event
// carries a name this version no longer writes.
func FuzzDecodeEvent(f *testing.F) {
	rec := []byte(`{"key":"k","status":"failed","sequence":1,"owner":"w","fence":2,"last_event":"ledger.failed"}`)
	f.Add("ledger.failed", "", rec)
	f.Add("ledger.completed", "failed", rec)
	f.Add("", "", rec)
	f.Add("", "", []byte(`{"key":"k","status":"pending","sequence":1}`))
	f.Add("ledger.admitted", "pending", []byte(`not json`))
	f.Fuzz(func(t *testing.T, name, status string, data []byte) {
		h := nats.Header{}
		if name != "" {
			h.Set(kvledger.EventHeader, name)
		}
		if status != "" {
			h.Set(kvledger.StatusHeader, status)
		}
		e, ok, err := kvledger.DecodeEvent(events.Msg{Subject: "$KV.b.task.k", Header: h, Data: data, Revision: 3})
		if err != nil || !ok {
			return
		}
		if e.Name == "ledger.failed" {
			t.Fatalf("decoded the old name: %+v", e)
		}
		if e.Key != "k" || e.Source != "b" || e.Revision != 3 {
			t.Fatalf("decoded %+v", e)
		}
	})
}
