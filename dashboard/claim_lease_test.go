package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A claim that names a lease shows the lease's expiry as the server holds
// it, not the LeaseUntil the claimant wrote with its own clock (which, for
// a healthy runtime claim, is long past: the runtime renews the lease, not
// the record); once the lease is gone the page says the claim is free.
func TestTaskPageShowsTheClaimLeasesRealExpiry(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "crunch", nil)
	}, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
	})
	ctx := natstest.Context(t, 20*time.Second)
	claimer := e.LeasedClaimer(t, "worker-7")
	// A claimant whose clock is an hour behind: its LeaseUntil is in the
	// past from the start.
	f, err := claimer.Claim(ctx, "worker", "crunch", "worker-7", 30*time.Second, time.Now().Add(-time.Hour))
	require.NoError(t, err)

	natstest.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(e.Page(t, "/task?key=crunch"), "unless renewed)")
	}, "the task page shows the lease's expiry")
	body := e.Page(t, "/task?key=crunch")
	require.NotContains(t, body, "clock)")
	require.Contains(t, body, `id="claim-lease">expires `)

	require.NoError(t, claimer.Release(ctx, "worker", "crunch", "worker-7", f, time.Now()))
	natstest.Eventually(t, 10*time.Second, func() bool {
		return !strings.Contains(e.Page(t, "/task?key=crunch"), `id="claim-lease"`)
	}, "a released claim shows no lease")
}
