package kvledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// One corrupt record does not hide the others: Snapshot returns the valid
// records and names the bad keys, and ForceDelete removes one.
func TestSnapshotListsAroundCorruptRecords(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l := newLedger(t, s)
	for _, k := range []kvledger.IdempotencyKey{"a", "b", "c"} {
		ok, err := l.Admit(ctx, "x", k, 1, nil, t0)
		require.NoError(t, err)
		require.True(t, ok)
	}
	kv, err := n.JS.KeyValue(ctx, s.Name())
	require.NoError(t, err)
	_, err = kv.Put(ctx, "task.b", []byte("not json"))
	require.NoError(t, err)
	_, err = kv.Put(ctx, "task.=zz", []byte(`{}`)) // a bucket key that is no escaped key
	require.NoError(t, err)

	snap, err := l.Snapshot(ctx)
	require.ErrorIs(t, err, kvledger.ErrCorruptRecord)
	var bad *kvledger.CorruptRecordsError
	require.True(t, errors.As(err, &bad))
	require.Len(t, bad.Records, 2)
	require.Equal(t, kvledger.IdempotencyKey("b"), bad.Records[0].Key)
	require.Equal(t, "task.b", bad.Records[0].BucketKey)
	require.Equal(t, "task.=zz", bad.Records[1].BucketKey)
	require.Contains(t, err.Error(), `"task.b"`)
	keys := []kvledger.IdempotencyKey{}
	for _, t := range snap.Tasks {
		keys = append(keys, t.Key)
	}
	require.Equal(t, []kvledger.IdempotencyKey{"a", "c"}, keys, "the valid records are all there")

	removed, err := s.ForceDelete(ctx, "b")
	require.NoError(t, err)
	require.True(t, removed)
	removed, err = s.ForceDelete(ctx, "b")
	require.NoError(t, err)
	require.False(t, removed)
	_, found, err := l.State(ctx, "b")
	require.NoError(t, err)
	require.False(t, found)
	ok, err := l.Admit(ctx, "x", "b", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok, "the key can be admitted again")
}
