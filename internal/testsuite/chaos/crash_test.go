package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// TestProcessCrashLeaseTakeover: a child process holding a renewed lease
// (TTL 2s) is killed with SIGKILL; a waiter in this process acquires the
// lease, woken by the server's expiry, within TTL + 1.5s of the kill, with a
// greater fence.
func TestProcessCrashLeaseTakeover(t *testing.T) {
	const ttl = 2 * time.Second
	const rounds = 2
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 2*time.Minute)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Bucket: "crash", Holder: "parent"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close(ctx)) })
	leases, err := crashFamily.Bind(m)
	require.NoError(t, err)

	var worst, total time.Duration
	for i := range rounds {
		c, line := startChild(t, "holder",
			envURL+"="+n.Server.ClientURL(), envBucket+"=crash", envTTL+"="+ttl.String())
		childFence, err := strconv.ParseUint(strings.TrimPrefix(line, "held "), 10, 64)
		require.NoError(t, err, line)
		_, held, err := leases.Holder(ctx, "job")
		require.NoError(t, err)
		require.True(t, held)

		require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
		killed := time.Now()
		g, ok, err := leases.Acquire(ctx, "job", ttl, 10*time.Second)
		took := time.Since(killed)
		require.NoError(t, err)
		require.True(t, ok)
		require.Greater(t, g.Fence(), childFence)
		require.LessOrEqual(t, took, ttl+1500*time.Millisecond, "round %d", i)
		t.Logf("round %d: SIGKILLed holder (fence %d), next holder acquired after %v (fence %d)", i, childFence, took, g.Fence())
		worst, total = max(worst, took), total+took
		require.NoError(t, g.Release(ctx))
		c.Kill(t)
	}
	report(t, "crash", fmt.Sprintf("process crash: %d SIGKILLed holders (TTL %v), takeover after mean %v, worst %v (bound %v)",
		rounds, ttl, (total/rounds).Round(time.Millisecond), worst.Round(time.Millisecond), ttl+1500*time.Millisecond))
}
