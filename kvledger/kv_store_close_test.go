package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestKVStoreCloseEndsItsSubscription: the subscription a store's writes
// are answered on (awaited and pipelined alike) ends with KVStore.Close,
// its connection still open: it used to live, with nats.go's goroutine
// for it, until the connection closed. Reads go on after Close; writes
// are refused.
func TestKVStoreCloseEndsItsSubscription(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, js, kvledger.KVStoreConfig{})
	base := natstest.IgnoreCurrent() // the server's own, for the stream
	subs := js.Conn().NumSubscriptions()

	l := newLedger(t, s)
	t0 := time.Unix(1_700_000_000, 0)
	ok, err := l.Admit(ctx, "a", "k", 1, nil, t0) // an awaited write
	require.NoError(t, err)
	require.True(t, ok)
	rec, found, err := s.Load(ctx, "k")
	require.NoError(t, err)
	require.True(t, found)
	next := rec
	next.UpdatedAt = t0.Add(time.Second)
	stored, ok, err := s.SwapAsync("k", rec, next)(ctx) // a pipelined one
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, subs+1, js.Conn().NumSubscriptions(), "one subscription for both")

	s.Close()
	natstest.VerifyNone(t, base)
	require.Equal(t, subs, js.Conn().NumSubscriptions())
	got, found, err := s.Load(ctx, "k")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, stored.Rev, got.Rev)
	_, _, err = s.Swap(ctx, "k", got, got)
	require.ErrorIs(t, err, kvx.ErrClosed)
	require.ErrorIs(t, err, kvledger.ErrClosed)
	require.False(t, kvx.OutcomeUnknown(err), "refused, never sent: %v", err)
	// The dependency index and a record's delete are the store's writes too.
	require.ErrorIs(t, s.IndexNeeds(ctx, "dep", []kvledger.IdempotencyKey{"k"}), kvledger.ErrClosed)
	_, _, err = s.DeleteRecord(ctx, "k", got)
	require.ErrorIs(t, err, kvledger.ErrClosed)
	s.Close() // idempotent
}
