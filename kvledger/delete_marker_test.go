package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestKVStoreDeleteMarkersExpire: under a retention every way a task key
// is removed (Ledger.Delete, an undone Restore, ForceDelete) writes the
// same delete marker, one that carries the retention as its TTL, so the
// key leaves the bucket instead of keeping a marker for good.
func TestKVStoreDeleteMarkersExpire(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	const retention = time.Hour
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "markers", Retention: retention})
	l := newLedger(t, s)
	str, err := n.JS.Stream(ctx, "KV_markers")
	require.NoError(t, err)
	requireMarkerTTL := func(key, how string) {
		t.Helper()
		m, err := str.GetLastMsgForSubject(ctx, "$KV.markers.task."+key)
		require.NoError(t, err, how)
		require.Equal(t, "DEL", m.Header.Get("KV-Operation"), how)
		require.Equal(t, retention.String(), m.Header.Get("Nats-TTL"), "%s: the marker expires after the retention", how)
	}

	ok, err := l.Admit(ctx, "op", "done", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	f, err := l.Claim(ctx, "w", "done", "w", time.Minute, t0)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "done", "w", f, kvledger.StatusCompleted, t0))
	require.NoError(t, l.Delete(ctx, "op", "done", t0))
	requireMarkerTTL("done", "Delete")

	ok, err = l.Admit(ctx, "op", "x", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	err = l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{
		{Key: "a", Status: kvledger.StatusPending, Sequence: 1},
		{Key: "x", Status: kvledger.StatusPending, Sequence: 1}}})
	require.ErrorIs(t, err, kvledger.ErrExists)
	requireMarkerTTL("a", "an undone Restore")

	removed, err := s.ForceDelete(ctx, "x")
	require.NoError(t, err)
	require.True(t, removed)
	requireMarkerTTL("x", "ForceDelete")
}
