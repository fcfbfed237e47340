package kvx_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nuid"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// batchSuite: an atomic batch lands whole, or not at all when one key
// exists; a stream without atomic publish refuses it with ErrNoAtomic.
func batchSuite(t *testing.T, b *kvx.Bucket) {
	ctx := natstest.Context(t, 30*time.Second)
	_, err := b.CreateBatchAs(ctx, nuid.Next(), []string{"b1", "b2"}, [][]byte{[]byte("1"), []byte("2")}, nil)
	require.ErrorIs(t, err, kvx.ErrNoAtomic)
	on, err := b.AtomicBatches(ctx)
	require.NoError(t, err)
	require.False(t, on)
	require.NoError(t, b.EnableAtomicBatches(ctx))
	on, err = b.AtomicBatches(ctx)
	require.NoError(t, err)
	require.True(t, on)

	keys := make([]string, 50)
	values := make([][]byte, 50)
	for i := range keys {
		keys[i], values[i] = fmt.Sprintf("b%d", i), []byte(fmt.Sprint(i))
	}
	revs, err := b.CreateBatchAs(ctx, nuid.Next(), keys, values, nil)
	require.NoError(t, err)
	for i, k := range keys {
		e, err := b.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, revs[i], e.Revision, k)
		require.Equal(t, values[i], e.Value)
	}
	_, err = b.CreateBatchAs(ctx, nuid.Next(), []string{"fresh1", "b7", "fresh2"}, [][]byte{[]byte("x"), []byte("x"), []byte("x")}, nil)
	require.ErrorIs(t, err, kvx.ErrConflict)
	_, err = b.Get(ctx, "fresh1")
	require.ErrorIs(t, err, kvx.ErrNotFound, "nothing of a refused batch is written")
}

func TestCreateBatch(t *testing.T) {
	n := natstest.WithServer(t)
	batchSuite(t, openBucket(t, n.JS, 1))
}

func TestCreateBatchR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster run")
	}
	c := natstest.WithCluster(t, 3)
	batchSuite(t, openBucket(t, c.JS, 3))
}

// Every message of a batch carries its own write id, which a caller whose
// commit answer was lost finds on the key to settle it.
func TestCreateBatchAsIdentifiesItsWrites(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	require.NoError(t, b.EnableAtomicBatches(ctx))
	keys := []string{"id.a", "id.b", "id.c"}
	_, err := b.CreateBatchAs(ctx, "batch-1", keys, [][]byte{[]byte("1"), []byte("2"), []byte("3")}, nil)
	require.NoError(t, err)
	for i, k := range keys {
		e, err := b.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, kvx.BatchMsgID("batch-1", i), e.MsgID, k)
	}
}

// A batch sent while no stream captures its subjects (a fresh replicated
// bucket whose interest is still propagating, imitated here by deleting
// the bucket and making it again a moment later) is answered "no
// responders" and sent again whole, as a single write would be, instead
// of failing at once.
func TestCreateBatchResendsWhenNoStreamListens(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 10*time.Second)
	require.NoError(t, n.JS.DeleteKeyValue(ctx, "t"))
	back := make(chan error, 1)
	time.AfterFunc(300*time.Millisecond, func() { // the fault's schedule, not a wait
		nb, err := kvx.Open(ctx, n.JS, kvx.Config{Bucket: "t", LimitMarkerTTL: time.Second, RequireTTL: true})
		if err == nil {
			err = nb.EnableAtomicBatches(ctx)
		}
		back <- err
	})
	revs, err := b.CreateBatchAs(ctx, nuid.Next(), []string{"r1", "r2"}, [][]byte{[]byte("1"), []byte("2")}, nil)
	require.NoError(t, natstest.Recv(t, back, 5*time.Second, "the bucket is back"))
	require.NoError(t, err, "the batch is sent again once a stream listens")
	require.Len(t, revs, 2)
	e, err := b.Get(ctx, "r2")
	require.NoError(t, err)
	require.Equal(t, revs[1], e.Revision)
}
