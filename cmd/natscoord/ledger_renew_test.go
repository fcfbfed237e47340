package main

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// ledger renew, run by another process than the one that claimed, cannot
// renew the claim's lease in place (only the process that took it holds
// its secret): it says so, in its help and in what it prints, with the
// new lease the claim now names, the unchanged fence, and the old lease
// left to live out its TTL.
func TestLedgerRenewSaysItTakesANewLease(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "build")
	c.ok("ledger", "claim", "build", "--owner", "w1", "--lease", "1m")
	claimed := jsonTask(t, c.ok("--json", "ledger", "show", "build"))
	require.NotEmpty(t, claimed.Lease)
	fence := fmt.Sprint(uint64(claimed.Fence))

	out := c.ok("ledger", "renew", "build", "--owner", "w1", "--fence", fence, "--lease", "2m")
	renewed := jsonTask(t, c.ok("--json", "ledger", "show", "build"))
	require.NotEqual(t, claimed.Lease, renewed.Lease, "a new lease")
	require.Equal(t, claimed.Fence, renewed.Fence, "the same fence")
	require.Regexp(t, `^build renewed by w1: fence `+fence+` \(unchanged: complete and release take it\), lease until \S+\n`+
		`  new lease: `+regexp.QuoteMeta(renewed.Lease)+`, which the server expires 2m0s after this renewal unless renewed again\n`+
		`  replaced:  `+regexp.QuoteMeta(claimed.Lease)+`, not renewed in place \(only the process that took it can\); it lives out its TTL,\n`+
		`\s+and renewing it \(as a worker still running the task does\) no longer keeps this claim alive\n$`, out)

	// Both leases are live on the server: the old one was left to its TTL.
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Bucket: worker.DefaultLeaseBucket})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(ctx) })
	for _, k := range []string{claimed.Lease, renewed.Lease} {
		_, held, err := m.HolderOfKey(ctx, k)
		require.NoError(t, err)
		require.True(t, held, k)
	}
	// The owner completes with the fence it had.
	require.Contains(t, c.ok("ledger", "complete", "build", "--owner", "w1", "--fence", fence, "--status", "completed"), "build completed by w1")
	require.Equal(t, kvledger.StatusCompleted, jsonTask(t, c.ok("--json", "ledger", "show", "build")).Status)

	help := c.ok("ledger", "renew", "--help")
	require.Contains(t, help, "cannot renew the\nlease the claim names in place")
	require.Contains(t, help, "the fence is unchanged")
	require.Contains(t, help, "no longer keeps this claim alive")
}
