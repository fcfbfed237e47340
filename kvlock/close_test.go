package kvlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// TestCloseLeavesNoGoroutine: a Locker that locked, led an election and
// removed its record (each write answered on a reply subscription of its
// buckets) leaves nothing running once closed, its connection still
// open: the subscriptions end with the Locker.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 30*time.Second)
	use := func() *kvlock.Locker {
		l, err := kvlock.New(ctx, js, kvlock.Config{TTL: 2 * time.Second})
		require.NoError(t, err)
		k, ok, err := l.TryAcquire(ctx, "k")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, k.Release(ctx))
		e := newElection(t, l, "e")
		require.NoError(t, e.Campaign(ctx, "a"))
		require.NoError(t, e.Resign(ctx)) // removes its record: the Locker's own bucket
		return l
	}
	closeLocker := func(l *kvlock.Locker) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, l.Close(cctx))
	}
	// Warm up: the bucket's stream (server goroutines) and the
	// connection's request inbox exist before the baseline is taken.
	closeLocker(use())
	before := natstest.IgnoreCurrent()
	subs := js.Conn().NumSubscriptions()
	closeLocker(use())
	natstest.VerifyNone(t, before)
	require.Equal(t, subs, js.Conn().NumSubscriptions())
}
