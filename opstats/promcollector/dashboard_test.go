package promcollector_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// The dashboard's series, registered through Handler.Families, gather
// as the dashboard's own /metrics page serves them (all but the Go
// runtime's, which client_golang's Go collector serves).
func TestDashboardSeriesSameAsMetricsPage(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	dashtest.BuildGraph(t, e.Ledger)
	dashtest.RunTask(t, e.Ledger, "fetch", "w1", kvledger.StatusCompleted)
	jobs, err := kvlease.Define("jobs", kvlease.StringCodec{}).Bind(e.Leases)
	require.NoError(t, err)
	_, ok, err := jobs.TryAcquire(dashtest.HoldCtx, "one", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	reg := register(t, e.Handler.Families)

	var names []string
	for _, f := range e.Handler.Families() {
		names = append(names, f.Name)
	}
	// The page and a gather a moment apart can see different counts while
	// events still arrive: compare until both read the same state.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		page := e.Page(t, "/metrics")
		require.Contains(c, page, `natscoord_ledger_tasks{status="completed"} 1`)
		require.Contains(c, page, `natscoord_lease_held{bucket="natscoord_leases",kind="lease"} 1`)
		require.NoError(c, testutil.GatherAndCompare(reg, bytes.NewBufferString(page), names...))
	}, 10*time.Second, 5*time.Millisecond, "the registry gathers what /metrics serves")
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}
