package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// TestCorruptLeaseRecord: a lease key holding a value someone else wrote
// (not a lease) gives a clear error from Holder and ErrCorruptValue from
// TryAcquire, which never overwrites it. (The ledger's
// equivalent is kvledger's TestKVStoreCorruptRecord.)
func TestCorruptLeaseRecord(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	m, err := kvlease.NewManager(ctx, n.JS, kvlease.Config{Bucket: "corrupt_leases"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close(ctx)) })
	leases, err := lockFamily.Bind(m)
	require.NoError(t, err)
	key, err := leases.LeaseKey("job")
	require.NoError(t, err)
	kv, err := n.JS.KeyValue(ctx, "corrupt_leases")
	require.NoError(t, err)
	for _, v := range []string{"not json", `{"owner":7}`, `[]`, "\xff\x00"} {
		_, err := kv.Put(ctx, key, []byte(v))
		require.NoError(t, err)
		_, held, err := leases.Holder(ctx, "job")
		require.ErrorIs(t, err, kvlease.ErrCorruptValue, v)
		require.True(t, held, v)
		require.Contains(t, err.Error(), "kvlease: ")
		g, ok, err := leases.TryAcquire(ctx, "job", time.Second)
		require.ErrorIs(t, err, kvlease.ErrCorruptValue, v)
		require.False(t, ok, "a foreign value is never overwritten by an acquisition")
		require.Nil(t, g)
		e, err := kv.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, v, string(e.Value()))
	}
}
