package kvlease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A View shares the manager's watch: a waiter already waiting on it loses
// nothing when the first sync turns the watch into a view, the view holds
// the keys under its prefix only, and the bucket keeps one consumer.
func TestViewSharesTheManagersWatch(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	m := newManager(t, n.JS, kvlease.Config{Holder: "one"})
	other := newManager(t, n.NewJS(t), kvlease.Config{Holder: "two"})

	_, err := m.View("bad..prefix")
	require.ErrorIs(t, err, kvlease.ErrInvalidKey)

	held, ok, err := other.TryAcquireKey(ctx, "app.l.k", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	outside, ok, err := other.TryAcquireKey(ctx, "else.k", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	won := make(chan *kvlease.Guard, 1)
	go func() {
		g, ok, err := m.AcquireKey(ctx, "app.l.k", 5*time.Second, 20*time.Second)
		if assertNoErr(t, err) && ok {
			won <- g
		}
	}()
	natstest.Eventually(t, 10*time.Second, func() bool { return m.Stats().Contended >= 2 }, "the waiter waits on the watch")

	v, err := m.View("app")
	require.NoError(t, err)
	require.Equal(t, "app", v.Prefix())
	require.False(t, v.Ready(), "an updates-only watch carries no view")
	require.NoError(t, v.SyncTo(ctx, outside.Revision()))
	require.True(t, v.Ready())
	e, ok := v.Lookup("app.l.k")
	require.True(t, ok, "a key written before the view: from the watch's initial values")
	require.Equal(t, held.Revision(), e.Revision)
	_, ok = v.Lookup("else.k")
	require.False(t, ok, "outside the prefix")
	var children []string
	require.NoError(t, v.Children("app.l", func(c kvlease.Change) bool {
		children = append(children, c.Key)
		return true
	}))
	require.Equal(t, []string{"app.l.k"}, children)
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, m.Bucket()))

	sub, err := v.Subscribe(ctx, "app.l.k")
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, held.Release(ctx))
	g := natstest.Recv(t, won, 10*time.Second, "the waiter takes the released key across the watch's restart")
	natstest.Eventually(t, 5*time.Second, func() bool {
		c, ok := v.Lookup("app.l.k")
		return ok && c.Revision == g.Revision()
	}, "the view follows the new holder")
	select {
	case c, ok := <-sub.C():
		require.True(t, ok)
		require.Equal(t, "app.l.k", c.Key)
	case <-time.After(5 * time.Second):
		t.Fatal("no change reached the subscription")
	}
	live, err := v.Live("app.l.k")
	require.NoError(t, err)
	require.True(t, live)
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, m.Bucket()))
	require.NoError(t, g.Release(ctx))

	require.NoError(t, m.Close(ctx))
	require.ErrorIs(t, v.SyncTo(ctx, 0), kvlease.ErrClosed)
	_, err = v.Subscribe(ctx, "app.l.k")
	require.ErrorIs(t, err, kvlease.ErrClosed)
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	return assert.NoError(t, err)
}
