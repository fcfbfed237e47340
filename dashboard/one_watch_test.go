package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// The dashboard reads each bucket through its owner's one watch: the
// lease bucket through the kvlease Manager that also serves its force
// releases, the ledger's records and schedules through its store's one
// watch. It costs the server one watch per bucket, before and after an
// action.
func TestDashboardRunsOneConsumerPerBucket(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	leases := e.Leases.Bucket()
	require.Equal(t, 1, natstest.BucketConsumers(t, e.Node.JS, leases), "the lease pages and force release share one watch")
	// The ledger's: the store's one watch of records and schedules (the
	// task view, the workers page), and the events page's consumer of the
	// bucket's history (the writes with their Ledger-Event headers, which
	// a watch of the latest values does not carry).
	require.Equal(t, 2, natstest.BucketConsumers(t, e.Node.JS, dashtest.LedgerBucket), "the record watch and the event consumer")

	s := e.OpenSSE(t)
	g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.j-1", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	s.WaitFor(t, "event: coord", `"ref":"jobs.j-1"`, `"what":"acquired"`)
	confirm := e.Page(t, "/confirm?do=force-release&bucket="+leases+"&key=jobs.j-1")
	form := url.Values{"do": {"force-release"}, "bucket": {leases}, "key": {"jobs.j-1"}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	resp := e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	natstest.WaitClosed(t, g.Done(), 10*time.Second, "the holder learns it lost the lease")
	s.WaitFor(t, "event: coord", `"ref":"jobs.j-1"`, `"what":"released"`)
	require.Equal(t, 1, natstest.BucketConsumers(t, e.Node.JS, leases), "after a force release")
}
