package kvlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

func TestFairServesArrivalOrderOneWakeupPerRelease(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	cfg := kvlock.Config{TTL: 2 * time.Second, Fair: true}
	holder := newLocker(t, n.JS, cfg)
	k0, err := holder.Acquire(ctx, "f")
	require.NoError(t, err)

	const waiters = 6
	lockers := make([]*kvlock.Locker, waiters)
	order := make(chan int, waiters)
	errs := make(chan error, waiters)
	for i := range waiters {
		lockers[i] = newLocker(t, n.NewJS(t), cfg)
		go func() {
			k, err := lockers[i].Acquire(ctx, "f")
			if err != nil {
				errs <- err
				return
			}
			order <- i
			errs <- k.Release(ctx)
		}()
		// Arrival order: the next waiter starts once this one is queued.
		natstest.Eventually(t, 5*time.Second, func() bool { return queueLen(t, n.JS, "lock.q.f") == i+1 }, "waiter %d queued", i)
	}
	// A newcomer's TryAcquire does not jump the queue.
	_, ok, err := holder.TryAcquire(ctx, "f")
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, k0.Release(ctx))
	for i := range waiters {
		require.Equal(t, i, natstest.Recv(t, order, 10*time.Second, fmt.Sprintf("waiter %d", i)))
	}
	for range waiters {
		require.NoError(t, natstest.Recv(t, errs, 10*time.Second, "release"))
	}
	var wakeups, contended uint64
	for _, l := range append(lockers, holder) {
		wakeups += l.Stats().FairWakeups
		contended += l.Stats().Lease.Contended
	}
	t.Logf("releases %d, fair wake-ups %d, contended lock attempts %d", waiters+1, wakeups, contended)
	// The holder took the lock with nobody queued, so it never queued. The
	// first waiter was first in line at once and waited for the lock
	// itself; each later one watched its predecessor (and, once right
	// behind the first in line, the lock) and was woken at most once per
	// handover: a release never wakes the whole queue. A waiter that finds
	// its predecessor already holding the lock when it looks needs no
	// wake-up at all.
	require.LessOrEqual(t, wakeups, uint64(waiters-1), "at most one wake-up per handover")
	require.LessOrEqual(t, contended, uint64(waiters), "no waiter tries the lock out of turn")
	require.Zero(t, queueLen(t, n.JS, "lock.q.f"), "queue empty afterwards")
}

func TestFairQueueEntryLostStopsWaiter(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	cfg := kvlock.Config{TTL: 2 * time.Second, RenewInterval: 200 * time.Millisecond, Fair: true}
	holder := newLocker(t, n.JS, cfg)
	k0, err := holder.Acquire(ctx, "e")
	require.NoError(t, err)
	w := newLocker(t, n.NewJS(t), cfg)
	done := make(chan error, 1)
	go func() {
		_, err := w.Acquire(ctx, "e")
		done <- err
	}()
	natstest.Eventually(t, 5*time.Second, func() bool { return queueLen(t, n.JS, "lock.q.e") == 1 }, "queued")
	kv, err := n.JS.KeyValue(ctx, "natscoord_leases")
	require.NoError(t, err)
	keys, err := kv.ListKeysFiltered(ctx, "lock.q.e.*")
	require.NoError(t, err)
	var last string
	for k := range keys.Keys() {
		if k > last && !strings.HasSuffix(k, ".t") { // an entry, not the ticket key
			last = k
		}
	}
	forced, err := holder.Manager().ForceReleaseKey(ctx, last)
	require.NoError(t, err)
	require.True(t, forced)
	err = natstest.Recv(t, done, 5*time.Second, "waiter stops")
	require.ErrorIs(t, err, kvlock.ErrQueueEntryLost)
	require.NoError(t, k0.Err())
	require.NoError(t, k0.Release(ctx))
}

func TestFairCrashedWaiterLeavesByTTL(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	cfg := kvlock.Config{TTL: time.Second, RenewInterval: 300 * time.Millisecond, Fair: true}
	holder := newLocker(t, n.JS, cfg)
	k0, err := holder.Acquire(ctx, "c")
	require.NoError(t, err)
	k0h := make(chan struct{})
	go func() { // keep the holder alive while the others queue
		defer close(k0h)
		for {
			select {
			case <-k0.Done():
				return
			case <-time.After(200 * time.Millisecond):
				_ = k0.Renew(ctx)
			}
		}
	}()

	crashNC := natstest.Connect(t, n.Server)
	crashed := newLocker(t, natstest.JetStream(t, crashNC), cfg)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go func() { _, _ = crashed.Acquire(cctx, "c") }()
	natstest.Eventually(t, 5*time.Second, func() bool { return queueLen(t, n.JS, "lock.q.c") == 1 }, "crashing waiter queued")
	next := newLocker(t, n.NewJS(t), cfg)
	got := make(chan *kvlock.Lock, 1)
	go func() {
		k, err := next.Acquire(ctx, "c")
		if assertNoErr(t, err) {
			got <- k
		}
	}()
	natstest.Eventually(t, 5*time.Second, func() bool { return queueLen(t, n.JS, "lock.q.c") == 2 }, "second waiter queued")
	crashNC.Close() // the waiter in the middle dies without leaving the queue
	require.NoError(t, k0.Release(ctx))
	<-k0h
	k := natstest.Recv(t, got, 5*time.Second, "next waiter acquires once the crashed entry expires")
	require.NoError(t, k.Release(ctx))
}
