package dashboard_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// The workers page lists the schedules stored in the ledger with their
// spec, kind and next period, and follows their changes live: the
// dashboard's record watch delivers them, and open pages are told.
func TestWorkersPageListsStoredSchedules(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	store := e.Ledger.Store().(*kvledger.KVStore)
	ctx := natstest.Context(t, 20*time.Second)
	s := e.OpenSSE(t)

	sc, err := store.CreateSchedule(ctx, kvledger.Schedule{Name: "nightly", Spec: "30 2 * * *", TimeZone: "Europe/Paris",
		Task: kvledger.ScheduleTask{Kind: "report", Task: json.RawMessage(`{"n":1}`)}})
	require.NoError(t, err)
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)
	body := e.Page(t, "/workers")
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><code>30 2 \* \* \*</code> <span class="muted small">Europe/Paris</span></td>\s*<td>report</td>`, body)
	next := sc.Next(time.Now()).UTC().Format("2006-01-02 15:04:05Z")
	require.Contains(t, body, `<td class="next">`+next+`</td>`)
	require.Contains(t, body, `<span class="muted">none yet</span>`)

	require.NoError(t, store.DeleteSchedule(ctx, "nightly", sc.Rev))
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)
	require.NotRegexp(t, regexp.MustCompile(`data-schedule="nightly"`), e.Page(t, "/workers"))
}

// A stored schedule removed while the ledger keeps its periods' tasks
// stays listed by those periods, labelled removed: it is neither stored
// nor registered in a worker's code. A schedule the dashboard never saw
// stored is labelled "not stored", which is true whether a worker's code
// registers it or it was removed before the dashboard watched.
func TestWorkersPageLabelsRemovedStoredSchedule(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	store := e.Ledger.Store().(*kvledger.KVStore)
	ctx := natstest.Context(t, 20*time.Second)
	s := e.OpenSSE(t)

	sc, err := store.CreateSchedule(ctx, kvledger.Schedule{Name: "nightly", Spec: "@daily", Task: kvledger.ScheduleTask{Kind: "report"}})
	require.NoError(t, err)
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)
	period := string(worker.PeriodKey("nightly", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	dashtest.Admit(t, e.Ledger, period, nil)
	coded := string(worker.PeriodKey("coded", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	dashtest.Admit(t, e.Ledger, coded, nil)
	s.WaitFor(t, "event: ledger", `"ref":"`+url.QueryEscape(coded)+`"`)
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><code>@daily</code></td>`, e.Page(t, "/workers"))

	require.NoError(t, store.DeleteSchedule(ctx, "nightly", sc.Rev))
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)
	body := e.Page(t, "/workers")
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><span class="muted" title="[^"]+">removed</span></td>`, body)
	require.Contains(t, body, `<code>`+period+`</code>`, "listed by its period")
	require.Regexp(t, `<tr data-schedule="coded"><td>coded</td>\s*<td><span class="muted" title="[^"]+">not stored</span></td>`, body)
	require.NotContains(t, body, "in code")

	// Stored again, it is listed as stored.
	_, err = store.CreateSchedule(ctx, kvledger.Schedule{Name: "nightly", Spec: "@hourly", Task: kvledger.ScheduleTask{Kind: "report"}})
	require.NoError(t, err)
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><code>@hourly</code></td>`, e.Page(t, "/workers"))
}
