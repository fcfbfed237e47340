package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

func TestCoordShowsLeasesLocksSemaphoresAndLeaders(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	s := e.OpenSSE(t)
	ctx := natstest.Context(t, 10*time.Second)

	lk, err := kvlock.New(ctx, e.Node.NewJS(t), kvlock.Config{Name: "app", Holder: "locker-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lk.Close(context.Background()) })
	lock, ok, err := lk.TryAcquire(ctx, "orders.42")
	require.NoError(t, err)
	require.True(t, ok)
	el, err := kvlock.NewElection(lk, "leader of things")
	require.NoError(t, err)
	require.NoError(t, el.Campaign(ctx, "locker-1"))

	sem, err := kvlease.DefineSemaphore("pool", 3, kvlease.StringCodec{}).Bind(e.Leases)
	require.NoError(t, err)
	slot, ok, err := sem.TryAcquire(dashtest.HoldCtx, "db", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := sem.Slot(slot)
	require.NoError(t, err)

	lease, err := kvlease.Define("jobs", kvlease.StringCodec{}).Bind(e.Leases)
	require.NoError(t, err)
	g, ok, err := lease.TryAcquire(dashtest.HoldCtx, "a.b c", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	// A lease acquired while the page is open has a known fence.
	s.WaitFor(t, "event: coord", `"what":"acquired"`, `"ref":"`+url.QueryEscape(g.Key())+`"`)
	body := e.Page(t, "/coord")
	for _, want := range []string{
		`id="coord-lock"`, `<code>orders.42</code>`, `<td>` + itoa(lock.Token()) + `</td>`,
		`id="coord-election"`, `<code>leader of things</code>`,
		`id="coord-semaphore"`, fmt.Sprintf(`<span class="muted">slot %d</span>`, n),
		`id="coord-lease"`, `<code>a.b c</code>`, `<td>` + itoa(g.Fence()) + `</td>`,
		`<td class="holder">locker-1</td>`, `<td class="holder">holder-1</td>`,
	} {
		require.Contains(t, body, want)
	}
	overview := e.Page(t, "/")
	require.Contains(t, overview, "<td><code>natscoord_leases</code></td><td>1</td><td>1</td><td>1</td><td>1</td><td>0</td>")

	require.NoError(t, lock.Release(ctx))
	s.WaitFor(t, "event: coord", `"what":"released"`, `"ref":"app.l.orders.42"`)
	require.NotContains(t, e.Page(t, "/fragment/coord"), `<code>orders.42</code>`)
}

// The lease view reads lease values with kvlease's decoder and kvlock's
// key parser: a value kvlease would not call a lease is not shown as
// one, and a fair-mode waiter names its lock key and ticket.
func TestCoordReadsLeasesAsTheirPackagesDo(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	s := e.OpenSSE(t)
	ctx := natstest.Context(t, 10*time.Second)
	kv, err := e.Node.NewJS(t).KeyValue(ctx, kvlease.DefaultBucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "jobs.forged", []byte(`{"holder":"mallory","ttl_ms":60000,"owner":"not-a-hash"}`))
	require.NoError(t, err)

	g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.real", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = g.Release(dashtest.HoldCtx) })
	s.WaitFor(t, "event: coord", `"ref":"jobs.real"`, `"what":"acquired"`)
	body := e.Page(t, "/coord")
	require.Contains(t, body, `data-lease="jobs.real"`)
	require.NotContains(t, body, "mallory")
	require.NotContains(t, body, `data-lease="jobs.forged"`)
}
