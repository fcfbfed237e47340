package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A running worker's claim is not taken by ledger claim --takeover after
// the claim TTL has passed: the worker renews its lease, not the record,
// so the record's lease until lies in the past while the claim is live.
// ledger show prints the lease's expiry on the server instead.
func TestLedgerTakeoverLeavesLiveWorkerClaim(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "slow", "--seq", "1", "--kind", "slow")
	work := c.start("work", "--kind", "slow", "--ttl", "1s", "--grace", "1s", "--drain", "0s", "--", "sh", "-c", "sleep 60")

	var rec kvledger.TaskState
	natstest.Eventually(t, 20*time.Second, func() bool {
		require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "slow")), &rec))
		return rec.Status == kvledger.StatusClaimed
	}, "the worker claims the task")
	require.NotEmpty(t, rec.Lease)
	natstest.Eventually(t, 10*time.Second, func() bool { return time.Now().After(rec.LeaseUntil.Add(500 * time.Millisecond)) },
		"the claim's lease until has passed")

	require.Contains(t, c.fail("ledger", "claim", "slow", "--owner", "intruder", "--takeover"), "stale")
	require.Contains(t, c.fail("ledger", "claim", "slow", "--owner", "intruder"), "lease")
	require.Regexp(t, `(?m)^lease until\s+\S+ \(server, lease `, c.ok("ledger", "show", "slow"))
	var after kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "slow")), &after))
	require.Equal(t, rec.Fence, after.Fence, "still the worker's claim")
	require.Equal(t, rec.Owner, after.Owner)
	work.stop(t)
}
