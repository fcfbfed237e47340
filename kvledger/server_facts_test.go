package kvledger_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// TestServerFactsForEventsFromTheBucket pins the nats-server behaviour the
// ledger's event log rests on (kvledger/doc.go, "Events"): a CAS write and
// an atomic-batch write keep their Nats-Expected-Last-Subject-Sequence and
// own headers in the stored message; a KV RePublish from $KV.<b>.task.>
// to ledger.<b>.> carries them; a bucket's History and RePublish can be
// changed by a stream update.
func TestServerFactsForEventsFromTheBucket(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	js := n.JS
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "F", History: 1})
	require.NoError(t, err)

	// Migration: History 1 -> 64 and a RePublish by a stream update.
	s, err := js.Stream(ctx, "KV_F")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgsPerSubject = 64
	cfg.RePublish = &jetstream.RePublish{Source: "$KV.F.task.>", Destination: "ledger.F.>"}
	cfg.AllowAtomicPublish = true
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	sub, err := n.NC.SubscribeSync("ledger.F.>")
	require.NoError(t, err)
	require.NoError(t, n.NC.Flush())

	pub := func(key, ev string, prev uint64) uint64 {
		m := nats.NewMsg("$KV.F." + key)
		m.Data = []byte(`{"x":1}`)
		m.Header.Set("Ledger-Event", ev)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(prev, 10))
		a, err := js.PublishMsg(ctx, m)
		require.NoError(t, err)
		return a.Sequence
	}
	r1 := pub("task.a", "ledger.admitted", 0)
	r2 := pub("task.a", "ledger.claimed", r1)
	pub("task.b", "ledger.admitted", 0)
	got, err := s.GetMsg(ctx, r2)
	require.NoError(t, err)
	require.Equal(t, "ledger.claimed", got.Header.Get("Ledger-Event"))
	require.Equal(t, strconv.FormatUint(r1, 10), got.Header.Get(jetstream.ExpectedLastSubjSeqHeader))
	h, err := kv.History(ctx, "task.a")
	require.NoError(t, err)
	require.Len(t, h, 2)

	for _, want := range []string{"ledger.F.a", "ledger.F.a", "ledger.F.b"} {
		m, err := sub.NextMsg(5 * time.Second)
		require.NoError(t, err)
		require.Equal(t, want, m.Subject)
		require.NotEmpty(t, m.Header.Get("Nats-Sequence"))
		require.NotEmpty(t, m.Header.Get("Ledger-Event"))
		t.Logf("republished %s headers %v", m.Subject, m.Header)
	}

	// Atomic batch: per-message headers kept.
	nc := n.NC
	for i, k := range []string{"task.c", "task.d"} {
		m := nats.NewMsg("$KV.F." + k)
		m.Data = []byte(`{}`)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		m.Header.Set("Ledger-Event", "ledger.scheduled")
		m.Header.Set("Nats-Batch-Id", "b1")
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == 1 {
			m.Header.Set("Nats-Batch-Commit", "1")
			resp, err := nc.RequestMsgWithContext(ctx, m)
			require.NoError(t, err)
			t.Logf("batch ack %s", resp.Data)
		} else {
			require.NoError(t, nc.PublishMsg(m))
		}
	}
	e, err := kv.Get(ctx, "task.d")
	require.NoError(t, err)
	bm, err := s.GetMsg(ctx, e.Revision())
	require.NoError(t, err)
	t.Logf("batch stored headers %v", bm.Header)
	require.Equal(t, "0", bm.Header.Get(jetstream.ExpectedLastSubjSeqHeader))
	require.Equal(t, "ledger.scheduled", bm.Header.Get("Ledger-Event"))
}

// TestServerFactTTLWithHistory: with History > 1, a key's final write
// carrying a TTL expires alone, and the key then reads as its earlier
// write again; a final write that rolls its key up leaves it empty once
// it expires. The ledger's retention relies on the second (doc.go).
func TestServerFactTTLWithHistory(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	js := n.JS
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "T", History: 64, LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	for _, rollup := range []bool{false, true} {
		key := "task.k" + strconv.FormatBool(rollup)
		r1, err := kv.Create(ctx, key, []byte("admitted"))
		require.NoError(t, err)
		m := nats.NewMsg("$KV.T." + key)
		m.Data = []byte("final")
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(r1, 10))
		m.Header.Set(jetstream.MsgTTLHeader, "1s")
		if rollup {
			m.Header.Set("Nats-Rollup", "sub")
		}
		_, err = js.PublishMsg(ctx, m)
		require.NoError(t, err)
		var got string // what the key reads once the final write expired
		natstest.Eventually(t, 10*time.Second, func() bool {
			e, err := kv.Get(ctx, key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
				got = "(none)"
			case err != nil:
				return false
			case string(e.Value()) == "final":
				return false // not expired yet
			default:
				got = string(e.Value())
			}
			return true
		}, "rollup=%v: the final write expires", rollup)
		if rollup {
			require.Equal(t, "(none)", got, "a rolled-up key is empty after its expiry")
		} else {
			require.Equal(t, "admitted", got, "without a rollup the earlier write comes back")
		}
	}
}
