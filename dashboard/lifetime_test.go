package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// The set-up context given to New ends when New returns (natscoord ui
// cancels it then): a lease taken afterwards must still appear, renew
// and leave the view, and /metrics must count it.
func TestLeaseViewOutlivesSetupContext(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	s := e.OpenSSE(t)
	lease, err := kvlease.Define("late", kvlease.StringCodec{}).Bind(e.Leases)
	require.NoError(t, err)
	g, ok, err := lease.TryAcquire(dashtest.HoldCtx, "k1", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	s.WaitFor(t, "event: coord", `"what":"acquired"`)
	require.Contains(t, e.Page(t, "/coord"), `<code>k1</code>`)
	require.Contains(t, e.Page(t, "/metrics"), `natscoord_lease_held{bucket="natscoord_leases",kind="lease"} 1`)
	require.Contains(t, e.Page(t, "/metrics"), "natscoord_lease_renewals_total 0")
	require.NoError(t, g.StartRenewing(100*time.Millisecond))
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, m := e.Get(t, "/metrics")
		return !strings.Contains(m, "natscoord_lease_renewals_total 0")
	}, "renewals are counted")
	require.NoError(t, g.Release(dashtest.HoldCtx))
	s.WaitFor(t, "event: coord", `"what":"released"`)
	require.NotContains(t, e.Page(t, "/coord"), `<code>k1</code>`)
}

// A lease bucket that does not exist when the dashboard starts is shown
// as absent, and watched from the moment something creates it.
func TestAbsentLeaseBucketIsShownThenWatched(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, "later_bucket"}
	})
	s := e.OpenSSE(t)
	require.Contains(t, e.Page(t, "/"), "<td><code>later_bucket</code></td><td colspan=\"5\" class=\"muted absent\">absent")
	require.Contains(t, e.Page(t, "/coord"), "Bucket <code>later_bucket</code> is absent")

	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, e.Node.NewJS(t), kvlease.Config{Bucket: "later_bucket", Holder: "late"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	s.WaitFor(t, "event: coord", `"bucket":"later_bucket"`, `"what":"watching"`)
	g, ok, err := m.TryAcquireKey(dashtest.HoldCtx, "jobs.late", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = g.Release(dashtest.HoldCtx) })
	s.WaitFor(t, "event: coord", `"bucket":"later_bucket"`, `"what":"acquired"`)
	body := e.Page(t, "/coord")
	require.NotContains(t, body, "is absent")
	require.Contains(t, body, `data-lease="jobs.late"`)
}
