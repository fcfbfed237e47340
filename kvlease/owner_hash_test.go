package kvlease_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestGuardOwnerHashMatchesStoredHolder(t *testing.T) {
	n := natstest.WithServer(t)
	m := newManager(t, n.JS, kvlease.Config{Bucket: "ownerhash"})
	ctx := natstest.Context(t, 10*time.Second)
	g, ok, err := m.TryAcquireKey(ctx, "raw.owner", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	kv, err := n.JS.KeyValue(ctx, "ownerhash")
	require.NoError(t, err)
	e, err := kv.Get(ctx, "raw.owner")
	require.NoError(t, err)
	var h kvlease.Holder
	require.NoError(t, json.Unmarshal(e.Value(), &h))
	require.Len(t, g.OwnerHash(), 64)
	require.Equal(t, h.OwnerHash, g.OwnerHash())

	g2, ok, err := m.TryAcquireKey(ctx, "raw.other", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotEqual(t, g.OwnerHash(), g2.OwnerHash(), "every ownership interval has its own owner")
	require.NoError(t, g.Release(ctx))
	require.NoError(t, g2.Release(ctx))
}
