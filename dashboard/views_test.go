package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

func TestOverviewCountsOldestReadyAndThroughput(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.BuildGraph(t, e.Ledger) }, nil)
	body := e.Page(t, "/")
	require.Contains(t, body, `data-count="pending">5<`)
	require.Contains(t, body, `data-count="total">5<`)
	require.Contains(t, body, `data-count="blocked">0<`)
	require.Contains(t, body, "Oldest ready task")
	require.Contains(t, body, `<code>fetch</code>`, "fetch is the only pending task with all needs done")

	dashtest.RunTask(t, e.Ledger, "fetch", "w1", kvledger.StatusCompleted)
	dashtest.RunTask(t, e.Ledger, "compile", "w1", kvledger.StatusFailed)
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, b := e.Get(t, "/fragment/overview")
		return strings.Contains(b, `data-count="blocked">2<`) && strings.Contains(b, `data-count="completed">1<`) &&
			strings.Contains(b, `data-count="failed">1<`)
	}, "counts follow the events; test and package are blocked by compile")
	// Finishes are counted from the events (the stream), which may
	// arrive a moment after the records.
	natstest.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(e.Page(t, "/fragment/overview"), `<b id="tp1">2</b> finished in the last minute`)
	}, "two completions, one failed, in the last minute")
	b := e.Page(t, "/fragment/overview")
	require.Contains(t, b, `<code>lint</code>`, "lint is ready now")
	require.NotContains(t, b, "<html", "a fragment is not a page")
}

func TestTaskListFiltersAndPaging(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		for i := range 7 {
			dashtest.Admit(t, e.Ledger, fmt.Sprintf("job-%d", i), map[string]any{"kind": []string{"a", "b"}[i%2]})
		}
		dashtest.Admit(t, e.Ledger, "other-1", map[string]any{"kind": "a"})
		dashtest.RunTask(t, e.Ledger, "job-0", "w1", kvledger.StatusCompleted)
	}, func(c *dashboard.Config) { c.PageSize = 3 })

	body := e.Page(t, "/tasks")
	require.Contains(t, body, `data-ref="other-1"`)
	require.Equal(t, 3, strings.Count(body, "<tr data-ref="))
	require.Contains(t, body, `id="next"`)

	// Walk every page with a prefix filter: each key once, newest first.
	var seen []string
	next := "/tasks?prefix=job-"
	for next != "" {
		b := e.Page(t, next)
		for _, part := range strings.Split(b, `<tr data-ref="`)[1:] {
			seen = append(seen, part[:strings.IndexByte(part, '"')])
		}
		next = ""
		if i := strings.Index(b, `id="next" href="`); i >= 0 {
			rest := b[i+len(`id="next" href="`):]
			u := strings.ReplaceAll(rest[:strings.IndexByte(rest, '"')], "&amp;", "&")
			next = strings.TrimPrefix(u, "")
		}
	}
	require.Equal(t, []string{"job-6", "job-5", "job-4", "job-3", "job-2", "job-1", "job-0"}, seen)

	b := e.Page(t, "/tasks?kind=b")
	require.Equal(t, 3, strings.Count(b, "<tr data-ref="))
	require.NotContains(t, b, `data-ref="job-0"`)
	b = e.Page(t, "/tasks?status=completed")
	require.Contains(t, b, `data-ref="job-0"`)
	require.Equal(t, 1, strings.Count(b, "<tr data-ref="))
	code, _ := e.Get(t, "/tasks?status=bogus")
	require.Equal(t, http.StatusBadRequest, code)
}

func TestTaskDetailTimeline(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	dashtest.Admit(t, e.Ledger, "t1", nil)
	ctx := natstest.Context(t, 5*time.Second)
	now := time.Now()
	f, err := e.Ledger.Claim(ctx, "sched", "t1", "w1", 50*time.Millisecond, now)
	require.NoError(t, err)
	require.NoError(t, e.Ledger.Renew(ctx, "sched", "t1", "w1", f, 50*time.Millisecond, now))
	f2, err := e.Ledger.Takeover(ctx, "sched", "t1", "w2", time.Minute, now.Add(time.Second))
	require.NoError(t, err)
	require.NoError(t, e.Ledger.Complete(ctx, "sched", "t1", "w2", f2, kvledger.StatusCompleted, now.Add(2*time.Second)))

	body := e.Page(t, "/task?key=t1")
	for _, want := range []string{
		"ledger.admitted", "ledger.claimed", fmt.Sprintf("claimed by w1 with fence %d", f),
		"ledger.renewed", "ledger.taken_over", fmt.Sprintf("taken over by w2 with fence %d", f2),
		"ledger.completed", "finished completed by w2",
	} {
		require.Contains(t, body, want)
	}
	require.Less(t, strings.Index(body, "ledger.admitted"), strings.Index(body, "ledger.completed"), "in time order")
	require.Contains(t, body, `data-field="status">completed<`)
	frag := e.Page(t, "/fragment/task?key=t1") // the live reload of the task page, timeline included
	require.Contains(t, frag, "ledger.taken_over")

	code, _ := e.Get(t, "/task?key=nope")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = e.Get(t, "/task")
	require.Equal(t, http.StatusBadRequest, code)
}

func TestDependencyGraphSVG(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.BuildGraph(t, e.Ledger)
		dashtest.RunTask(t, e.Ledger, "fetch", "w1", kvledger.StatusCompleted)
		dashtest.RunTask(t, e.Ledger, "lint", "w1", kvledger.StatusFailed)
	}, nil)
	body := e.Page(t, "/graph?key=test")
	require.Contains(t, body, `<svg xmlns="http://www.w3.org/2000/svg" class="graph"`)
	// Upstream (compile, fetch) and downstream (package) of test.
	for _, k := range []string{"fetch", "compile", "test", "package"} {
		require.Contains(t, body, fmt.Sprintf(`data-ref="%s"`, k))
	}
	require.Contains(t, body, `class="node status-blocked"`)
	require.Contains(t, body, "blocked by lint", "package is blocked by lint: the graph says why")
	require.Contains(t, body, `class="edge edge-done"`, "fetch completed: compile is no longer held up by it")
	require.Contains(t, body, `class="edge edge-blocks"`, "lint failed: it blocks package")
	require.Contains(t, body, "pending · waits on 1", "test waits on compile")
	require.Contains(t, body, `class="node status-pending focus"`)

	resp, err := e.Server.Client().Get(e.Base + "/graph.svg?key=test")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	code, _ := e.Get(t, "/graph?key=missing")
	require.Equal(t, http.StatusNotFound, code)
}

func TestEventsPageAndSSE(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.Admit(t, e.Ledger, "before", nil) }, nil)
	require.Contains(t, e.Page(t, "/events"), `<code>before</code>`, "the page starts with recent events")
	s := e.OpenSSE(t)
	dashtest.Admit(t, e.Ledger, "a b/c", nil)
	data := s.WaitFor(t, "event: ledger", `"ref":"a+b%2Fc"`)
	require.Contains(t, data, `"name":"ledger.admitted"`)
	require.Contains(t, data, `"status":"pending"`)
	require.True(t, strings.HasPrefix(data, "data: {"), data)
	dashtest.RunTask(t, e.Ledger, "a b/c", "w9", kvledger.StatusCompleted)
	data = s.WaitFor(t, "event: ledger", `"name":"ledger.completed"`)
	require.Contains(t, data, `"owner":"w9"`)
}

func TestKeysWithAnyBytesAreEscaped(t *testing.T) {
	nasty := "<script>alert(1)</script>\x00\u202e\n\"'&"
	// Admission refuses the NUL and the newline; a record stored before
	// that rule still reaches the pages.
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.StoreRecord(t, e.Ledger, nasty) }, nil)
	ref := url.QueryEscape(nasty)
	for _, path := range []string{"/tasks", "/task?key=" + ref, "/graph?key=" + ref, "/events", "/"} {
		body := e.Page(t, path)
		require.NotContains(t, body, "<script>alert", path)
		require.NotContains(t, body, "\xff", path)
	}
	body := e.Page(t, "/task?key="+ref)
	require.Contains(t, body, "&lt;script&gt;", "shown quoted and escaped")
	require.Contains(t, body, `\x00\u202e\n`, "control bytes and invalid UTF-8 are visible")
}

// No lease's owner hash reaches a page; with HidePayloads no task's
// payload does either (without it, only the task's own page shows it).
func TestNoSecretReachesThePage(t *testing.T) {
	var ownerHash string
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.j1", 10*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		ownerHash = g.OwnerHash()
		dashtest.Admit(t, e.Ledger, "t", map[string]any{"kind": "k", "password": "hunter2"})
	}, func(c *dashboard.Config) { c.HidePayloads = true })
	for _, path := range []string{"/coord", "/", "/task?key=t", "/fragment/task?key=t", "/tasks", "/fragment/coord", "/events"} {
		body := e.Page(t, path)
		require.NotContains(t, body, ownerHash, path)
		require.NotContains(t, body, "hunter2", "payloads are not rendered: %s", path)
	}
}

func TestPrefixMount(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.Admit(t, e.Ledger, "p1", nil) }, func(c *dashboard.Config) { c.Prefix = "/ui" })
	body := e.Page(t, "/tasks")
	require.Contains(t, body, `href="/ui/task?key=p1"`)
	require.Contains(t, body, `src="/ui/static/app.js"`)
	require.Contains(t, e.Page(t, "/static/app.js"), "EventSource")
	resp, err := e.Server.Client().Get(e.Server.URL + "/tasks")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestMetrics(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.BuildGraph(t, e.Ledger)
		dashtest.Admit(t, e.Ledger, "lone", nil)
		_, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.j1", 10*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
	}, nil)
	dashtest.RunTask(t, e.Ledger, "fetch", "w1", kvledger.StatusCompleted)
	dashtest.RunTask(t, e.Ledger, "lone", "w1", kvledger.StatusFailed)
	// The event counts and the task counts come from two feeds (the
	// event consumer and the record view), each in step with the stream
	// on its own: wait for both rather than read one after the other.
	wants := []string{
		`natscoord_ledger_events_total{event="ledger.completed",status="completed"} 1`,
		// A failed completion is ledger.completed too; its status
		// tells it apart.
		`natscoord_ledger_events_total{event="ledger.completed",status="failed"} 1`,
		`natscoord_ledger_tasks{status="failed"} 1`,
		`natscoord_ledger_tasks{status="pending"} 4`,
		`natscoord_ledger_tasks{status="completed"} 1`,
		`natscoord_ledger_claims_in_flight 0`,
		`natscoord_lease_held{bucket="natscoord_leases",kind="lease"} 1`,
		`natscoord_events_lag_seconds`,
		`natscoord_events_pending`,
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, b := e.Get(t, "/metrics")
		for _, want := range wants {
			if !strings.Contains(b, want) {
				return false
			}
		}
		return true
	}, "metrics of the finished task, all of: %q", wants)
}

func TestConfigRefusedUpFront(t *testing.T) {
	ctx := natstest.Context(t, time.Second)
	_, err := dashboard.New(ctx, dashboard.Config{})
	require.ErrorIs(t, err, dashboard.ErrInvalidConfig)
	n := natstest.WithServer(t)
	_, err = dashboard.New(ctx, dashboard.Config{JS: n.JS, Prefix: "ui"})
	require.ErrorIs(t, err, dashboard.ErrInvalidConfig)
	_, err = dashboard.New(ctx, dashboard.Config{JS: n.JS, PageSize: 10_000})
	require.ErrorIs(t, err, dashboard.ErrInvalidConfig)
	_, err = dashboard.New(ctx, dashboard.Config{JS: n.JS})
	require.ErrorContains(t, err, `ledger bucket "natscoord_ledger"`, "looking creates nothing without Create")
}
