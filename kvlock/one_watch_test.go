package kvlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// A Locker costs the server one consumer on its bucket for its locks and
// elections: its manager's watch wakes barging waiters, keeps the fair
// queue's view and wakes candidates (the fair queue opened a watch of its
// own before) and feeds every Observe, in order.
func TestLockerRunsOneConsumerOnTheBucket(t *testing.T) {
	for _, fair := range []bool{true, false} {
		name := "barging"
		if fair {
			name = "fair"
		}
		t.Run(name, func(t *testing.T) {
			n := natstest.WithServer(t)
			ctx := natstest.Context(t, 30*time.Second)
			l := newLocker(t, n.JS, kvlock.Config{Name: "one", TTL: 2 * time.Second, Fair: fair})
			bucket := l.Manager().Bucket()
			require.Zero(t, natstest.BucketConsumers(t, n.JS, bucket), "an idle Locker watches nothing")

			held, err := l.Acquire(ctx, "k")
			require.NoError(t, err)
			waited := make(chan *kvlock.Lock, 1)
			go func() {
				k, err := l.Acquire(ctx, "k")
				if assertNoErr(t, err) {
					waited <- k
				}
			}()
			if fair {
				natstest.Eventually(t, 10*time.Second, func() bool { return queueLen(t, n.JS, "one.q.k") == 1 }, "the waiter queued")
			}

			e1, e2 := newElection(t, l, "svc"), newElection(t, l, "svc")
			events := e1.Observe(ctx)
			require.True(t, recvEvent(t, events).Vacant)
			events2 := newElection(t, l, "other").Observe(ctx)
			require.True(t, recvEvent(t, events2).Vacant)
			require.NoError(t, e1.Campaign(ctx, "one"))
			require.Equal(t, "one", recvEvent(t, events).Info.Value)
			campaigned := make(chan error, 1)
			go func() { campaigned <- e2.Campaign(ctx, "two") }()

			require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, bucket), "waiters, the queue and two observers share one watch")

			require.NoError(t, held.Release(ctx))
			k := natstest.Recv(t, waited, 10*time.Second, "the waiter takes the lock")
			require.NoError(t, e1.Resign(ctx))
			require.True(t, recvEvent(t, events).Vacant)
			require.NoError(t, natstest.Recv(t, campaigned, 10*time.Second, "the second candidate wins"))
			require.Equal(t, "two", recvEvent(t, events).Info.Value)
			require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, bucket), "after the handovers")
			require.NoError(t, k.Release(ctx))

			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			require.NoError(t, l.Close(cctx))
			natstest.Eventually(t, 10*time.Second, func() bool { return natstest.BucketConsumers(t, n.JS, bucket) == 0 }, "Close stops the watch")
		})
	}
}
