package main

import (
	"fmt"
	"regexp"
	"strings"
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
	c.ok("ledger", "admit", "--no-kind", "build")
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
		`  replaced:  `+regexp.QuoteMeta(claimed.Lease)+`, not renewed in place \(only the process that took it can\); it expires at its TTL\n`+
		`\s+unless its holder renews it, and renewing it no longer keeps this claim alive\n`+
		`  warning:   `+regexp.QuoteMeta(claimed.Lease)+` is live on the server, held by w1 \(pid \d+ on [^)]+\)\. If that is a running worker\n`, out)
	require.NotContains(t, out, "lives out its TTL")

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
	require.Contains(t, help, "expires at its TTL unless its\n    holder renews it")
	require.NotContains(t, help, "lives out its TTL")
}

// A renewal of a worker's claim from the command line replaces the
// worker's lease in the record, a lease the worker renews for as long as
// it runs: renew says the old lease is live, that the claim now lives by
// the new lease only, and that once that ends the task can be taken over
// while the worker may still be running it.
func TestLedgerRenewOfAWorkersClaimWarns(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "long", "--kind", "slow")
	work := c.start("work", "--kind", "slow", "--name", "worker-a", "--ttl", "5s", "--drain", "50ms", "--grace", "100ms",
		"--", "sh", "-c", "sleep 30")
	var rec kvledger.TaskState
	natstest.Eventually(t, 20*time.Second, func() bool {
		r := c.run("--json", "ledger", "show", "long")
		if r.code != 0 {
			return false
		}
		rec = jsonTask(t, r.stdout)
		return rec.Status == kvledger.StatusClaimed
	}, "the worker claims the task")
	require.NotEmpty(t, rec.Lease)

	out := c.ok("ledger", "renew", "long", "--owner", "worker-a", "--fence", fmt.Sprint(uint64(rec.Fence)), "--lease", "1m")
	require.Contains(t, out, "  replaced:  "+rec.Lease+", not renewed in place")
	require.Regexp(t, `(?m)^  warning:   `+regexp.QuoteMeta(rec.Lease)+` is live on the server, held by worker-a \(pid \d+ on [^)]+\)\. `+
		`If that is a running worker$`, out)
	flat := strings.Join(strings.Fields(out), " ")
	require.Contains(t, flat, "the claim now lives by the new lease only, and once that ends the task can be taken over "+
		"while that worker may still be running it (fencing refuses its outcome; it does not stop the work)")
	require.Equal(t, 0, work.stop(t).code)
}

// Two renewals at once: each names as replaced the lease of the record it
// wrote over, so one names the claim's lease and the other the first's
// new lease. A read of the record before the renewal named the claim's
// lease for both whenever both read before either wrote.
func TestLedgerRenewNamesTheLeaseItReplaced(t *testing.T) {
	c, _ := newCLI(t)
	for i := range 4 {
		key := fmt.Sprintf("k%d", i)
		c.ok("ledger", "admit", "--no-kind", key)
		c.ok("ledger", "claim", key, "--owner", "w1", "--lease", "1m")
		claimed := jsonTask(t, c.ok("--json", "ledger", "show", key))
		fence := fmt.Sprint(uint64(claimed.Fence))
		a := c.start("ledger", "renew", key, "--owner", "w1", "--fence", fence)
		b := c.start("ledger", "renew", key, "--owner", "w1", "--fence", fence)
		leases := func(r result) (taken, replaced string) {
			t.Helper()
			require.Equal(t, 0, r.code, r.stderr)
			m := regexp.MustCompile(`(?m)^  new lease: (\S+),[^\n]*\n  replaced:  (\S+),`).FindStringSubmatch(r.stdout)
			require.NotNil(t, m, r.stdout)
			return m[1], m[2]
		}
		takenA, replA := leases(a.result(t))
		takenB, replB := leases(b.result(t))
		require.True(t, (replA == claimed.Lease && replB == takenA) || (replB == claimed.Lease && replA == takenB),
			"a: %s over %s, b: %s over %s, claim's lease %s", takenA, replA, takenB, replB, claimed.Lease)
	}
}

// renew --json prints the record as read after the renewal, the same
// record ledger show --json prints: the fence unchanged, the new lease
// named, and nothing else (the lease lines are the text output's).
func TestLedgerRenewJSONPrintsTheRenewedRecord(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "build")
	claimed := jsonTask(t, c.ok("--json", "ledger", "claim", "build", "--owner", "w1", "--lease", "1m"))
	require.NotEmpty(t, claimed.Lease)

	out := c.ok("--json", "ledger", "renew", "build", "--owner", "w1", "--fence", fmt.Sprint(uint64(claimed.Fence)), "--lease", "2m")
	renewed := jsonTask(t, out)
	require.Equal(t, kvledger.StatusClaimed, renewed.Status)
	require.Equal(t, claimed.Fence, renewed.Fence, "the same fence")
	require.Equal(t, kvledger.RenewedEvent, renewed.LastEvent)
	require.NotEmpty(t, renewed.Lease)
	require.NotEqual(t, claimed.Lease, renewed.Lease, "the new lease")
	require.Equal(t, jsonTask(t, c.ok("--json", "ledger", "show", "build")), renewed)
	require.NotContains(t, out, "replaced")
}
