package kvx_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// Compare-and-sets sent together without waiting each get their own
// answer: a lost race refuses only its own write (unlike an atomic
// batch), and the winners land at the revisions they report.
func TestUpdateAsyncPipelinesIndependentCAS(t *testing.T) {
	n := natstest.WithServer(t)
	asyncSuite(t, openBucket(t, n.JS, 1))
}

// The same on a replicated (R3) bucket, whose conflicts carry another
// error code.
func TestUpdateAsyncCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	asyncSuite(t, openBucket(t, c.JS, 3))
}

func asyncSuite(t *testing.T, b *kvx.Bucket) {
	ctx := natstest.Context(t, 30*time.Second)
	const count = 20
	revs := make([]uint64, count)
	for i := range revs {
		r, err := b.Create(ctx, "k"+strconv.Itoa(i), []byte("0"), 0)
		require.NoError(t, err)
		revs[i] = r
	}
	waits := make([]func(context.Context) (uint64, error), count)
	for i := range waits {
		rev := revs[i]
		if i == 7 {
			rev++ // stale: this one alone must lose
		}
		waits[i] = b.UpdateAsyncAs("k"+strconv.Itoa(i), []byte("1"), rev, 0, "id"+strconv.Itoa(i), nil)
	}
	for i, wait := range waits {
		got, err := wait(ctx)
		if i == 7 {
			require.ErrorIs(t, err, kvx.ErrConflict)
			continue
		}
		require.NoError(t, err, "key %d", i)
		e, err := b.Get(ctx, "k"+strconv.Itoa(i))
		require.NoError(t, err)
		require.Equal(t, got, e.Revision)
		require.Equal(t, "1", string(e.Value))
	}
	e, err := b.Get(ctx, "k7")
	require.NoError(t, err)
	require.Equal(t, "0", string(e.Value))
	require.Equal(t, revs[7], e.Revision)

	// A key the bucket refuses fails at once, without a publish.
	_, err = b.UpdateAsyncAs("bad key", []byte("1"), 1, 0, "", nil)(ctx)
	require.Error(t, err)
}

// A pipelined write's wait called again returns its first answer: its
// answer channel went back to the pool once answered, and a second
// receive would take the answer of the next write that got it.
func TestUpdateAsyncWaitTwice(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	r1, err := b.Create(ctx, "a", []byte("0"), 0)
	require.NoError(t, err)
	r2, err := b.Create(ctx, "b", []byte("0"), 0)
	require.NoError(t, err)
	w1 := b.UpdateAsyncAs("a", []byte("1"), r1, 0, "ida", nil)
	got1, err := w1(ctx)
	require.NoError(t, err)
	w2 := b.UpdateAsyncAs("b", []byte("1"), r2, 0, "idb", nil)
	again, err := w1(ctx)
	require.NoError(t, err)
	require.Equal(t, got1, again, "the first answer, not another write's")
	got2, err := w2(ctx)
	require.NoError(t, err, "the second write keeps its own answer")
	e, err := b.Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, e.Revision, got2)
}
