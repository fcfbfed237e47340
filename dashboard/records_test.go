package dashboard_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Events are the ledger bucket's writes: messages anyone publishes on the
// live feed's subjects or the old event subjects change neither a task's
// state on the pages nor the series on /metrics.
func TestForgedEventsChangeNeitherStateNorSeries(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "f1", nil)
		dashtest.RunTask(t, e.Ledger, "f1", "w1", kvledger.StatusFailed)
	}, nil)
	s := e.OpenSSE(t)
	forge := func(name events.Name, key, status string) {
		b, err := events.Marshal(events.Event{Name: name, Source: dashtest.LedgerBucket, Key: key, Status: status,
			Owner: "mallory", Fence: 99, Revision: 1_000_000, Time: time.Now()})
		require.NoError(t, err)
		require.NoError(t, e.Node.NC.Publish(string(name), b))
		require.NoError(t, e.Node.NC.Publish(kvledger.LiveSubject(dashtest.LedgerBucket)[:len(kvledger.LiveSubject(dashtest.LedgerBucket))-1]+key, b))
	}
	forge(kvledger.CompletedEvent, "f1", string(kvledger.StatusCompleted))
	const invented = 300
	for i := range invented {
		forge(events.Name(fmt.Sprintf("ledger.invented_%d", i)), "f1", string(kvledger.StatusCompleted))
	}
	// The consumer delivers in order: once a real admission after them
	// is seen, every forged event was handled.
	dashtest.Admit(t, e.Ledger, "after", nil)
	s.WaitFor(t, "event: event", `"ref":"after"`)

	require.Contains(t, e.Page(t, "/tasks"), `data-field="status">failed<`)
	require.NotContains(t, e.Page(t, "/tasks"), `data-field="status">completed<`)
	m := e.Page(t, "/metrics")
	require.Contains(t, m, `natscoord_ledger_tasks{status="failed"} 1`)
	require.Contains(t, m, `natscoord_ledger_tasks{status="completed"} 0`)
	require.NotContains(t, m, "invented")
	require.Contains(t, m, `natscoord_ledger_events_total{event="ledger.admitted",status="pending"} 1`)
}

// Records a ledger's Retention expires leave the view (they produce no
// event), and a deleted record leaves the "needed by" of its needs.
func TestExpiredAndDeletedRecordsLeaveTheView(t *testing.T) {
	const bucket = "ledger_with_retention"
	var l *kvledger.Ledger
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		ctx := natstest.Context(t, 10*time.Second)
		js := e.Node.NewJS(t)
		store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket, Retention: time.Second})
		require.NoError(t, err)
		l, err = kvledger.New(store)
		require.NoError(t, err)
	}, func(c *dashboard.Config) { c.Ledger = bucket })
	s := e.OpenSSE(t)
	dashtest.Admit(t, l, "n0", nil)
	dashtest.Admit(t, l, "gone", nil)
	dashtest.RunTask(t, l, "gone", "w1", kvledger.StatusCompleted)
	s.WaitFor(t, "event: ledger", `"ref":"gone"`, `"status":"completed"`)
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, body := e.Get(t, "/tasks")
		return !strings.Contains(body, `data-ref="gone"`)
	}, "the expired record leaves the task list")
	require.Contains(t, e.Page(t, "/metrics"), `natscoord_ledger_tasks{status="completed"} 0`)

	// A removed dependent leaves "needed by" of its need.
	dashtest.Admit(t, l, "dep", nil, "n0")
	s.WaitFor(t, "event: ledger", `"ref":"dep"`)
	require.Contains(t, e.Page(t, "/task?key=n0"), `<a href="/task?key=dep">`)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := l.Cancel(ctx, "op", "dep", "test", time.Now())
	require.NoError(t, err)
	require.NoError(t, l.Delete(ctx, "op", "dep", time.Now()))
	s.WaitFor(t, "event: ledger", `"ref":"dep"`, `"name":"ledger.deleted"`)
	body := e.Page(t, "/task?key=n0")
	require.NotContains(t, body, "key=dep")
	require.NotContains(t, e.Page(t, "/graph?key=n0"), "key=dep")
}
