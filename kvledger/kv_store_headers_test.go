package kvledger_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestKVStoreWriteHeadersPerWrite checks the headers each stored write
// carries, through the ledger's own paths (Submit, ClaimIfReady, an
// awaited and a pipelined outcome, on two keys): exactly its own
// transition's name and a write id of its own. The writes share one
// read-only header per transition name and reuse their messages once
// sent, so a header left behind by one write (a write id the server would
// take for a duplicate, another transition's name) would show here.
func TestKVStoreWriteHeadersPerWrite(t *testing.T) {
	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l := newLedger(t, s)
	ctx := natstest.Context(t, 30*time.Second)
	now := time.Now()
	want := map[string][]string{}
	for i, k := range []kvledger.IdempotencyKey{"a", "b"} {
		ok, err := l.Submit(ctx, "test", kvledger.Submission{Key: k, Seq: 1, Kind: "k"})
		require.NoError(t, err)
		require.True(t, ok)
		rec, err := l.ClaimIfReady(ctx, "test", k, "w", time.Minute, now)
		require.NoError(t, err)
		o := kvledger.Outcome{Status: kvledger.StatusCompleted}
		if i == 0 {
			_, err = l.Finish(ctx, "test", k, "w", rec.Fence, o, now)
		} else {
			_, err = l.FinishAsync(ctx, "test", k, "w", rec.Fence, o, now).Wait(ctx)
		}
		require.NoError(t, err)
		want["task."+string(k)] = []string{string(kvledger.AdmittedEvent), string(kvledger.ClaimedEvent), string(kvledger.CompletedEvent)}
	}

	str, err := n.JS.Stream(ctx, "KV_"+s.Name())
	require.NoError(t, err)
	got := map[string][]string{}
	ids := map[string]bool{}
	info, err := str.Info(ctx)
	require.NoError(t, err)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := str.GetMsg(ctx, seq)
		require.NoError(t, err)
		key := m.Subject[len("$KV."+s.Name()+"."):]
		if _, ok := want[key]; !ok {
			continue // not a record write
		}
		require.Len(t, m.Header.Values(kvledger.EventHeader), 1, "write %d of %s", seq, key)
		got[key] = append(got[key], m.Header.Get(kvledger.EventHeader))
		id := m.Header.Get(jetstream.MsgIDHeader)
		require.NotEmpty(t, id, "write %d of %s has no write id", seq, key)
		require.False(t, ids[id], "write %d of %s repeats write id %q", seq, key, id)
		ids[id] = true
	}
	require.Equal(t, want, got)
}
