package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/dashtest"
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
	require.NoError(t, g.Release(dashtest.HoldCtx))
	s.WaitFor(t, "event: coord", `"what":"released"`)
	require.NotContains(t, e.Page(t, "/coord"), `<code>k1</code>`)
}
