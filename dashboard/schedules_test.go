package dashboard_test

import (
	"context"
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

	sc, period, _ := nightlyAndCoded(t, ctx, e, store, s)

	require.NoError(t, store.DeleteSchedule(ctx, "nightly", sc.Rev))
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)
	body := e.Page(t, "/workers")
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><span class="muted" title="[^"]+">removed</span></td>`, body)
	require.Contains(t, body, `<code>`+period+`</code>`, "listed by its period")
	require.Regexp(t, `<tr data-schedule="coded"><td>coded</td>\s*<td><span class="muted" title="[^"]+">not stored</span></td>`, body)
	require.NotContains(t, body, "in code")

	// Stored again, it is listed as stored.
	storeSchedule(t, ctx, store, s, "nightly", "@hourly")
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><code>@hourly</code></td>`, e.Page(t, "/workers"))
}

// A schedule removed while the dashboard's record watch was down (the
// watch ended and was started again) is labelled removed, as one whose
// removal the watch delivered: the new watch no longer delivers it. It
// was "not stored", as a schedule registered in a worker's code is. The
// removed names no task of their periods lists are dropped at a sync.
func TestWorkersPageLabelsScheduleRemovedWhileTheWatchWasDown(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	store := e.Ledger.Store().(*kvledger.KVStore)
	ctx := natstest.Context(t, 30*time.Second)
	s := e.OpenSSE(t)

	sc, period, _ := nightlyAndCoded(t, ctx, e, store, s)
	other := storeSchedule(t, ctx, store, s, "other", "@hourly")

	e.Handler.RewatchRecords(func() { require.NoError(t, store.DeleteSchedule(ctx, "nightly", sc.Rev)) })
	s.WaitFor(t, "event: schedule", `"name":"other"`) // the new watch delivers what is stored
	removed := regexp.MustCompile(`<tr data-schedule="nightly"><td>nightly</td>\s*<td><span class="muted" title="[^"]+">removed</span></td>`)
	var body string
	natstest.Eventually(t, 10*time.Second, func() bool {
		body = e.Page(t, "/workers")
		return removed.MatchString(body)
	}, "nightly labelled removed after the new watch synced")
	require.Regexp(t, `<tr data-schedule="other"><td>other</td>\s*<td><code>@hourly</code></td>`, body)
	require.Regexp(t, `<tr data-schedule="coded"><td>coded</td>\s*<td><span class="muted" title="Registered in a worker's code, `+
		`or removed from the ledger before this dashboard's watch saw it: [^"]+">not stored</span></td>`, body)
	require.Equal(t, 1, e.Handler.RemovedSchedules())

	// Its last task gone, the name is kept until the next sync of a
	// watch; so is other's, removed with no task listed: a worker that
	// had not seen the removal yet may still admit one of its periods.
	dashtest.RunTask(t, e.Ledger, period, "w", kvledger.StatusCompleted)
	require.NoError(t, e.Ledger.Delete(ctx, "t", kvledger.IdempotencyKey(period), time.Now()))
	s.WaitFor(t, "event: ledger", `"ref":"`+url.QueryEscape(period)+`"`, string(kvledger.DeletedEvent))
	require.NoError(t, store.DeleteSchedule(ctx, "other", other.Rev))
	s.WaitFor(t, "event: schedule", `"name":"other"`)
	require.Equal(t, 2, e.Handler.RemovedSchedules())
	// The kept names label no row: the page lists neither schedule from
	// the events that removed them, before any sync.
	body = e.Page(t, "/workers")
	require.NotContains(t, body, `data-schedule="nightly"`)
	require.NotContains(t, body, `data-schedule="other"`)
	e.Handler.RewatchRecords(func() {})
	natstest.Eventually(t, 10*time.Second, func() bool { return e.Handler.RemovedSchedules() == 0 }, "the removed names without a listed task are dropped at the sync")
}

// A period admitted after its schedule's removal, by a worker whose
// watch had not delivered the removal yet, is listed as removed: the
// name is not dropped at the removal although no task listed it then
// (it was, and the row said "not stored").
func TestWorkersPageLabelsPeriodAdmittedAfterItsScheduleRemoval(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	store := e.Ledger.Store().(*kvledger.KVStore)
	ctx := natstest.Context(t, 20*time.Second)
	s := e.OpenSSE(t)

	sc := storeSchedule(t, ctx, store, s, "nightly", "@daily")
	require.NoError(t, store.DeleteSchedule(ctx, "nightly", sc.Rev))
	s.WaitFor(t, "event: schedule", `"name":"nightly"`)

	period := admitPeriod(t, e, "nightly", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	s.WaitFor(t, "event: ledger", `"ref":"`+url.QueryEscape(period)+`"`)
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><span class="muted" title="[^"]+">removed</span></td>`, e.Page(t, "/workers"))
}

// storeSchedule stores a schedule name with spec (task kind "report")
// and waits until the dashboard's stream shows it.
// nightlyAndCoded stores the schedule "nightly" (@daily) and admits a
// task of its period of 2026-12-01 and one of "coded" (a schedule only a
// worker's code names), once the dashboard lists nightly as stored.
func nightlyAndCoded(t *testing.T, ctx context.Context, e *dashtest.Env, store *kvledger.KVStore, s *dashtest.SSEStream) (sc kvledger.Schedule, period, coded string) {
	t.Helper()
	sc = storeSchedule(t, ctx, store, s, "nightly", "@daily")
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	period = admitPeriod(t, e, "nightly", day)
	coded = admitPeriod(t, e, "coded", day)
	s.WaitFor(t, "event: ledger", `"ref":"`+url.QueryEscape(coded)+`"`)
	require.Regexp(t, `<tr data-schedule="nightly"><td>nightly</td>\s*<td><code>@daily</code></td>`, e.Page(t, "/workers"))
	return sc, period, coded
}

func storeSchedule(t *testing.T, ctx context.Context, store *kvledger.KVStore, s *dashtest.SSEStream, name, spec string) kvledger.Schedule {
	t.Helper()
	sc, err := store.CreateSchedule(ctx, kvledger.Schedule{Name: name, Spec: spec, Task: kvledger.ScheduleTask{Kind: "report"}})
	require.NoError(t, err)
	s.WaitFor(t, "event: schedule", `"name":"`+name+`"`)
	return sc
}

// admitPeriod admits the task of schedule name's period at day and
// returns its key.
func admitPeriod(t *testing.T, e *dashtest.Env, name string, day time.Time) string {
	t.Helper()
	k := string(worker.PeriodKey(name, day))
	dashtest.Admit(t, e.Ledger, k, nil)
	return k
}
