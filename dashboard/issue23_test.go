package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// failWith is a handler whose attempt fails with msg (retried while
// attempts are left).
func failWith(msg string) worker.Handler {
	return func(context.Context, *worker.Task) error { return errors.New(msg) }
}

// badgeOf returns the badge text of key's row on a task list page.
func badgeOf(t *testing.T, body, key string) string {
	t.Helper()
	m := regexp.MustCompile(`<tr data-ref="` + regexp.QuoteMeta(key) + `">[\s\S]*?data-field="status">([a-z]+)<`).FindStringSubmatch(body)
	require.NotNil(t, m, "no row for %s", key)
	return m[1]
}

// The badge, the filter, the overview cards and the metrics name what a
// person tells apart: a task whose run-at is ahead is scheduled (not
// ready), one waiting out a backoff is retrying (not pending), a
// cancelled one is cancelled (not failed).
func TestPhasesNameScheduledRetryingCancelled(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Delay: time.Hour})
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "flaky", Kind: "flaky", MaxAttempts: 3})
		e.RunAttempt(t, "flaky", "w1", time.Hour, failWith("boom"))
		dashtest.Admit(t, e.Ledger, "dropped", nil)
		_, err := e.Ledger.Cancel(natstest.Context(t, 5*time.Second), "op", "dropped", "not needed", time.Now())
		require.NoError(t, err)
		dashtest.Admit(t, e.Ledger, "now", nil)
		dashtest.Admit(t, e.Ledger, "broke", nil)
		dashtest.RunTask(t, e.Ledger, "broke", "w1", kvledger.StatusFailed)
	}, nil)

	body := e.Page(t, "/tasks")
	for key, want := range map[string]string{"later": "scheduled", "flaky": "retrying", "dropped": "cancelled", "now": "pending", "broke": "failed"} {
		require.Equal(t, want, badgeOf(t, body, key), key)
	}
	require.Contains(t, body, `<option value="scheduled">scheduled</option>`, "the filter offers the phases")

	for phase, keys := range map[string][]string{"scheduled": {"later"}, "retrying": {"flaky"}, "cancelled": {"dropped"}, "failed": {"broke"}, "pending": {"now"}} {
		page := e.Page(t, "/tasks?status="+phase)
		require.Equal(t, len(keys), strings.Count(page, "<tr data-ref="), "filter %s: %s", phase, page)
		for _, k := range keys {
			require.Contains(t, page, `<tr data-ref="`+k+`">`, phase)
		}
	}
	code, body := e.Get(t, "/tasks?status=nonsense")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "scheduled, retrying")

	over := e.Page(t, "/")
	for phase, n := range map[string]string{"scheduled": "1", "retrying": "1", "cancelled": "1", "failed": "1", "pending": "1", "total": "5"} {
		require.Contains(t, over, `data-count="`+phase+`">`+n+`<`, phase)
	}
	require.NotContains(t, over, `data-count="claimed"`)
	require.Contains(t, over, `<h2>Oldest ready task</h2>
    <p><a href="/task?key=now">`, "a scheduled task, admitted first, is not the oldest ready one")

	metrics := e.Page(t, "/metrics")
	for _, line := range []string{`natscoord_ledger_task_phases{phase="scheduled"} 1`, `natscoord_ledger_task_phases{phase="retrying"} 1`,
		`natscoord_ledger_task_phases{phase="cancelled"} 1`, `natscoord_ledger_task_phases{phase="failed"} 1`} {
		require.Contains(t, metrics, line)
	}

	// A record change pushed to the browsers carries the phase the badge shows.
	s := e.OpenSSE(t)
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "tomorrow", Delay: 24 * time.Hour})
	s.WaitFor(t, "event: ledger", `"ref":"tomorrow"`, `"phase":"scheduled"`)
}

// The task page shows attempts n of max with each attempt's error, the
// run-at, the result and the finished time; its timeline draws each
// write once, shows an attempt's
// error on the event that ended it only, and colours a failed completion
// as a failure.
func TestTaskPageAttemptsAndTimelineOutcomes(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "flaky", Kind: "flaky", MaxAttempts: 3})
		e.RunAttempt(t, "flaky", "w1", time.Second, failWith("boom one"))
		e.RunAttempt(t, "flaky", "w1", time.Second, func(context.Context, *worker.Task) error { return worker.Permanent(errors.New("boom two")) })

		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "good", Kind: "good"})
		e.RunAttempt(t, "good", "w1", 0, func(_ context.Context, task *worker.Task) error { return task.SetRawResult([]byte(`{"rows":42}`)) })
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Delay: time.Hour})
	}, nil)

	body := e.Page(t, "/task?key=flaky")
	require.Contains(t, body, `<dd id="attempts">2 of 3</dd>`)
	require.Contains(t, body, `id="task-status" class="badge status-failed"`)
	require.Contains(t, body, `id="finished"`)
	// Each attempt: its number of the max, its owner, its start and end
	// (both known: the bucket keeps the record's writes) and its own error.
	rows := regexp.MustCompile(`<tr class="outcome-(\w+)"><td>(\d) of 3</td><td>w1</td><td>[^<]+</td><td>[^<]+</td><td>\w+</td><td class="err">([^<]*)</td></tr>`).FindAllStringSubmatch(body, -1)
	require.Len(t, rows, 2, body)
	require.Equal(t, []string{"retried", "1", "boom one"}, rows[0][1:])
	require.Equal(t, []string{"failed", "2", "permanent: boom two"}, rows[1][1:])

	tl := body[strings.Index(body, `<ol class="timeline">`):]
	tl = tl[:strings.Index(tl, "</ol>")]
	require.Equal(t, 1, strings.Count(tl, "<b>ledger.completed</b>"), "each event once: %s", tl)
	require.Equal(t, 1, strings.Count(tl, "boom one"), "the first attempt's error is not repeated under the next claim: %s", tl)
	require.Regexp(t, `<li class="ev-completed outcome-bad">[^\n]*<b>ledger.completed</b> finished failed`, tl, "a failed completion is drawn as a failure")
	require.Regexp(t, `<li class="ev-retried outcome-warn">`, tl)

	require.NotContains(t, body, `id="attempts-partial"`)

	good := e.Page(t, "/task?key=good")
	require.Regexp(t, `<tr class="outcome-completed"><td>1</td><td>w1</td><td>[^<]+</td><td>[^<]+</td><td>completed</td><td class="err"></td></tr>`, good)
	require.Contains(t, good, "<pre class=\"payload result\" id=\"result\">{\n  &#34;rows&#34;: 42\n}</pre>")
	require.Contains(t, good, `<dd id="attempts">1 of the worker's default</dd>`)
	require.Regexp(t, `<li class="ev-completed outcome-ok">`, good)
	require.Contains(t, good, `id="finished"`)

	later := e.Page(t, "/task?key=later")
	require.Contains(t, later, `<dd id="run-at">`)
	require.Contains(t, later, "(not before)")
	require.NotContains(t, later, `id="finished"`)
}

// operatorEnv is an Env whose dashboard acts through the ledger's own
// operator calls.
func operatorEnv(t *testing.T, setup func(*dashtest.Env), mod func(*dashboard.Config)) *dashtest.Env {
	var led *kvledger.Ledger
	return dashtest.NewEnv(t, func(e *dashtest.Env) {
		led = e.Ledger
		if setup != nil {
			setup(e)
		}
	}, func(c *dashboard.Config) {
		c.Tasks = dashtest.OperatorActions{L: led}
		if mod != nil {
			mod(c)
		}
	})
}

// The task page's controls are part of the fragment that reloads on
// every write of the record: after a live update to completed, the
// reloaded body offers no Cancel.
func TestTaskControlsFollowTheState(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) { dashtest.Admit(t, e.Ledger, "job", nil) }, nil)
	body := e.Page(t, "/task?key=job")
	require.Contains(t, body, `id="cancel"`)
	require.NotContains(t, body, `id="remove"`)
	require.Contains(t, e.Page(t, "/confirm?do=cancel&key=job"), "It is pending now.", "the confirm page says the state it acts on")
	require.Regexp(t, `<div data-fragment="/fragment/task\?key=job" data-on="ledger action" data-ref="job" id="task-body">\s*<section[\s\S]*id="controls"[\s\S]*<ol class="timeline">`, body,
		"the controls reload with the facts and the timeline")

	s := e.OpenSSE(t)
	dashtest.RunTask(t, e.Ledger, "job", "w1", kvledger.StatusCompleted)
	s.WaitFor(t, "event: ledger", `"ref":"job"`, `"phase":"completed"`)
	frag := e.Page(t, "/fragment/task?key=job")
	require.Contains(t, frag, `class="badge status-completed"`)
	require.NotContains(t, frag, `id="cancel"`, "no Cancel on a completed task")
	require.NotContains(t, frag, `id="reopen"`)
	require.Contains(t, frag, `id="remove"`)
}

// Bulk actions choose tasks by key or filter, list what would change
// (the dry run) and act only on the listed keys after a confirm with the
// CSRF token; each change is the ledger's compare-and-set, so a task
// that moved since the listing is refused.
func TestBulkActions(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) {
		for _, k := range []string{"etl/a", "etl/b"} {
			dashtest.Admit(t, e.Ledger, k, nil)
			dashtest.RunTask(t, e.Ledger, k, "w1", kvledger.StatusFailed)
		}
		dashtest.Admit(t, e.Ledger, "etl/c", nil)
		dashtest.Admit(t, e.Ledger, "other", nil)
		dashtest.RunTask(t, e.Ledger, "other", "w1", kvledger.StatusFailed)
		dashtest.Admit(t, e.Ledger, "done", nil)
		dashtest.RunTask(t, e.Ledger, "done", "w1", kvledger.StatusCompleted)
	}, nil)
	s := e.OpenSSE(t)

	require.Contains(t, e.Page(t, "/tasks?prefix=etl/"), `href="/bulk?prefix=etl%2F"`, "the task list links its filter to the bulk form")
	form := e.Page(t, "/bulk")
	require.Contains(t, form, `<option value="rm">rm</option>`)

	// The dry run: a filter chooses the failed tasks under the prefix only.
	dry := e.Page(t, "/bulk?do=reopen&prefix=etl/")
	require.Contains(t, dry, "Dry run: reopen")
	require.Equal(t, 2, strings.Count(dry, "would reopen"), dry)
	require.NotContains(t, dry, "<code>etl/c</code>", "a pending task is not chosen for reopen")
	require.NotContains(t, dry, "<code>other</code>")
	require.Regexp(t, `name="task" value="\d+:etl%2Fa"`, dry)
	require.Regexp(t, `name="task" value="\d+:etl%2Fb"`, dry)
	post := url.Values{"do": {"reopen"}, "bulk": {"1"}, "task": dashtest.BulkTasksOf(t, dry)}
	require.Equal(t, http.StatusForbidden, e.Post(t, post, nil).StatusCode, "no CSRF token")
	post.Set("csrf", dashtest.CSRFOf(t, dry))
	require.Equal(t, http.StatusForbidden, e.Post(t, post, map[string]string{"Sec-Fetch-Site": "cross-site"}).StatusCode)
	st, _, err := e.Ledger.State(natstest.Context(t, 5*time.Second), "etl/a")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, st.Status, "nothing changed before the confirm")

	resp := e.Post(t, post, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), url.QueryEscape("reopen: 2 of 2 task(s) done"))
	s.WaitAll(t, []string{"event: event", `"name":"ledger.reopened"`, `"ref":"etl%2Fa"`},
		[]string{"event: event", `"name":"ledger.reopened"`, `"ref":"etl%2Fb"`})
	st, _, err = e.Ledger.State(natstest.Context(t, 5*time.Second), "other")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, st.Status, "a task outside the selection is untouched")

	// By key: the dry run says which keys the action does not apply to,
	// and the form carries only the others.
	dry = e.Page(t, "/bulk?do=rm&keys="+url.QueryEscape("done\netl/c\nmissing"))
	require.Contains(t, dry, "would rm")
	require.Contains(t, dry, "cannot rm a task that is pending")
	require.Contains(t, dry, "no such task")
	require.Regexp(t, `name="task" value="\d+:done"`, dry)
	require.NotRegexp(t, `name="task" value="\d+:etl%2Fc"`, dry)
	post = url.Values{"do": {"rm"}, "bulk": {"1"}, "task": dashtest.BulkTasksOf(t, dry), "csrf": {dashtest.CSRFOf(t, dry)}}
	require.Equal(t, http.StatusSeeOther, e.Post(t, post, nil).StatusCode)
	s.WaitFor(t, "event: event", `"name":"ledger.deleted"`, `"ref":"done"`)

	// A task that moved between the dry run and the confirm is refused.
	dry = e.Page(t, "/bulk?do=cancel&keys=etl/c")
	_, err = e.Ledger.Cancel(natstest.Context(t, 5*time.Second), "someone", "etl/c", "", time.Now())
	require.NoError(t, err)
	post = url.Values{"do": {"cancel"}, "bulk": {"1"}, "task": dashtest.BulkTasksOf(t, dry), "csrf": {dashtest.CSRFOf(t, dry)}}
	resp = e.Post(t, post, nil)
	require.Contains(t, resp.Header.Get("Location"), "failed")
	require.Contains(t, resp.Header.Get("Location"), url.QueryEscape("0 of 1"))

	// A key may hold spaces: keys are read one a line.
	dashtest.Admit(t, e.Ledger, "two words", nil)
	s.WaitFor(t, "event: ledger", `"ref":"two+words"`)
	dry = e.Page(t, "/bulk?do=cancel&keys="+url.QueryEscape("two words\r\n\n"))
	require.Regexp(t, `name="task" value="\d+:two&#43;words"`, dry, "one key, spaces kept")
	require.Equal(t, 1, strings.Count(dry, "would cancel"))

	code, _ := e.Get(t, "/bulk?do=reopen&keys=a&status=failed")
	require.Equal(t, http.StatusBadRequest, code, "keys or a filter, not both")
	code, _ = e.Get(t, "/bulk?do=reopen")
	require.Equal(t, http.StatusBadRequest, code, "neither keys nor a filter")
}

// A read-only dashboard, or one without a task runtime, offers no bulk
// action.
func TestBulkActionsNotOffered(t *testing.T) {
	e := operatorEnv(t, nil, func(c *dashboard.Config) { c.ReadOnly = true })
	code, _ := e.Get(t, "/bulk")
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, e.Page(t, "/tasks"), "bulk-link")
	post := url.Values{"do": {"cancel"}, "bulk": {"1"}, "task": {"1:x"}}
	require.Equal(t, http.StatusForbidden, e.Post(t, post, nil).StatusCode)
}

// The workers page lists each live claim lease of the ledger with the
// tasks whose records name it and when it expires, and the schedules
// seen in the ledger with their last period and its state.
func TestWorkersAndSchedulesPage(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		for _, start := range []time.Time{time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)} {
			dashtest.Admit(t, e.Ledger, string(worker.PeriodKey("hourly/report", start)), nil)
		}
		dashtest.RunTask(t, e.Ledger, string(worker.PeriodKey("hourly/report", time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC))), "w1", kvledger.StatusCompleted)
	}, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
	})
	ctx := natstest.Context(t, 10*time.Second)
	claimer := e.LeasedClaimer(t, "worker-7")

	s := e.OpenSSE(t)
	dashtest.Admit(t, e.Ledger, "crunch", nil)
	_, err := claimer.Claim(ctx, "worker", "crunch", "worker-7", 30*time.Second, time.Now())
	require.NoError(t, err)
	rec, _, err := e.Ledger.State(ctx, "crunch")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(rec.Lease, kvledger.LeasePrefix(dashtest.LedgerBucket)+kvledger.ClaimLeaseInfix), rec.Lease)
	s.WaitAll(t, []string{"event: coord", `"what":"acquired"`}, []string{"event: ledger", `"ref":"crunch"`, `"phase":"running"`})

	body := e.Page(t, "/workers")
	require.Regexp(t, `<tr data-lease="`+regexp.QuoteMeta(url.QueryEscape(rec.Lease))+`"><td class="holder">worker-7</td><td class="owner">worker-7</td>`, body)
	require.Regexp(t, `<td class="runs"><a href="/task\?key=crunch"><code>crunch</code></a>`, body)
	require.Regexp(t, `<td class="ttl" data-expires="\d+">`, body)

	require.Regexp(t, `<tr data-schedule="hourly%2Freport"><td>hourly/report</td>\s*<td><span class="muted" title="[^"]+">not stored</span></td>`, body)
	require.Contains(t, body, `<td class="last">2026-12-01 23:00:00Z</td>`)
	require.Contains(t, body, `<code>schedule/hourly/report/2026-12-01T23:00:00Z</code>`)
	sched := body[strings.Index(body, `id="schedules"`):]
	require.Contains(t, sched, `<span class="badge status-pending">pending</span>`, "the last period's state")
	require.Contains(t, sched, "<td>2</td>", "two periods kept")
	require.Contains(t, e.Page(t, "/"), `href="/workers"`)
}

// The dependency graph names phases too: a delayed task is scheduled,
// not "pending · ready", and a cancelled need is drawn as cancelled.
func TestGraphNamesPhases(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Delay: time.Hour})
		dashtest.Admit(t, e.Ledger, "dropped", nil)
		_, err := e.Ledger.Cancel(natstest.Context(t, 5*time.Second), "op", "dropped", "", time.Now())
		require.NoError(t, err)
		dashtest.Admit(t, e.Ledger, "after", nil, "dropped")
	}, nil)
	body := e.Page(t, "/graph?key=later")
	require.Contains(t, body, `class="node status-scheduled focus"`)
	require.NotContains(t, body, "pending · ready")
	require.Contains(t, body, ">scheduled<")
	body = e.Page(t, "/graph?key=after")
	require.Contains(t, body, `class="node status-cancelled"`)
	require.Contains(t, body, "blocked by dropped")
}

// When a scheduled task's run-at passes, nothing is written, yet its
// phase changes: the dashboard pushes the change at the run-at, so the
// badge turns pending and the counts follow with no write.
func TestRunAtPassingIsPushed(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	s := e.OpenSSE(t)
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "soon", Delay: 3 * time.Second}) // long enough for the first page on a loaded machine
	s.WaitFor(t, "event: ledger", `"ref":"soon"`, `"phase":"scheduled"`)
	require.Contains(t, e.Page(t, "/"), `data-count="scheduled">1<`)
	s.WaitFor(t, "event: ledger", `"ref":"soon"`, `"phase":"pending"`)
	require.Contains(t, e.Page(t, "/"), `data-count="pending">1<`)
	require.Contains(t, e.Page(t, "/"), `data-count="scheduled">0<`)
}

// Cancel of a running task from the dashboard asks: the task shows as
// cancelling, with neither Cancel, Reopen nor rm offered, until its
// claimant has ended it; it is then cancelled, its dependent blocked,
// and Reopen is offered. Before, it was cancelled at once under its
// claimant, and Reopen was offered while the claimant still ran it.
func TestCancelOfARunningTaskShowsCancelling(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "job", nil)
		dashtest.Admit(t, e.Ledger, "dep", nil, "job")
	}, nil)
	ctx := natstest.Context(t, 10*time.Second)
	fence, err := e.Ledger.Claim(ctx, "test", "job", "w1", time.Minute, time.Now())
	require.NoError(t, err)
	s := e.OpenSSE(t)
	confirm := e.Page(t, "/confirm?do=cancel&key=job")
	form := url.Values{"do": {"cancel"}, "key": {"job"}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	resp := e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NotContains(t, resp.Header.Get("Location"), "error")
	s.WaitFor(t, "event: ledger", `"ref":"job"`, `"phase":"cancelling"`)
	frag := e.Page(t, "/fragment/task?key=job")
	require.Contains(t, frag, `class="badge status-cancelling"`)
	for _, id := range []string{`id="cancel"`, `id="reopen"`, `id="remove"`} {
		require.NotContains(t, frag, id, "nothing to do on a cancelling task")
	}

	require.NoError(t, e.Ledger.Complete(ctx, "test", "job", "w1", fence, kvledger.StatusCompleted, time.Now()))
	s.WaitFor(t, "event: ledger", `"ref":"job"`, `"phase":"cancelled"`)
	frag = e.Page(t, "/fragment/task?key=job")
	require.Contains(t, frag, `class="badge status-cancelled"`)
	require.Contains(t, frag, `id="reopen"`)
	s.WaitFor(t, "event: ledger", `"ref":"dep"`, `"status":"blocked"`)
}
