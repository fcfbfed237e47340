package kvlock_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// Held locks are renewed by kvlease's one scheduler: holding 300 locks
// adds no goroutine per lock (a watchdog goroutine each, before).
func TestHoldCostsNoGoroutinePerLock(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	l := newLocker(t, n.JS, kvlock.Config{TTL: 3 * time.Second, RenewInterval: 300 * time.Millisecond})
	_, release, err := l.Hold(ctx, "warm") // starts the manager's workers
	require.NoError(t, err)
	release()
	before := runtime.NumGoroutine()
	const holds = 300
	var releases []func()
	var hctxs []context.Context
	for i := range holds {
		hctx, release, err := l.Hold(ctx, "h."+strconv.Itoa(i))
		require.NoError(t, err)
		releases = append(releases, release)
		hctxs = append(hctxs, hctx)
	}
	// Renewed past the TTL: every lock is still held.
	renewed := l.Stats().Lease.Renewals
	natstest.Eventually(t, 20*time.Second, func() bool { return l.Stats().Lease.Renewals >= renewed+2*holds }, "two renewals per lock")
	during := runtime.NumGoroutine()
	t.Logf("goroutines: %d before, %d while holding %d locks", before, during, holds)
	require.Less(t, during-before, 30, "goroutines independent of the number of held locks")
	for i, hctx := range hctxs {
		require.NoError(t, hctx.Err(), "hold %d", i)
	}
	for _, r := range releases {
		r()
	}
}
