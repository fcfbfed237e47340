package browsertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// operatorEnv is an Env whose dashboard acts through the ledger's own
// operator calls (reopen, cancel, rm).
func operatorEnv(t *testing.T, setup func(*dashtest.Env)) *dashtest.Env {
	var led *kvledger.Ledger
	return dashtest.NewEnv(t, func(e *dashtest.Env) {
		led = e.Ledger
		if setup != nil {
			setup(e)
		}
	}, func(c *dashboard.Config) { c.Tasks = dashtest.OperatorActions{L: led} })
}

// A person tells a delayed task (scheduled), one waiting out a backoff
// (retrying) and a cancelled one (cancelled) apart on the task list, and
// a cancel seen live turns the badge to cancelled, not failed.
func TestBrowserBadgesNamePhases(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Delay: time.Hour})
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "flaky", Kind: "flaky", MaxAttempts: 3})
		e.RunAttempt(t, "flaky", "w1", time.Hour, func(context.Context, *worker.Task) error { return errors.New("boom") })
		dashtest.Admit(t, e.Ledger, "victim", nil)
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "soon", Delay: 5 * time.Second})
	}, nil)
	step(t, ctx, "open the task list", chromedp.Navigate(e.Base+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	require.Equal(t, "scheduled", eval[string](t, ctx, statusOf("later")))
	require.Equal(t, "retrying", eval[string](t, ctx, statusOf("flaky")))
	require.Equal(t, "pending", eval[string](t, ctx, statusOf("victim")))
	require.Equal(t, "scheduled", eval[string](t, ctx, statusOf("soon")))
	eval[bool](t, ctx, `window.__stay = true`)

	_, err := e.Ledger.Cancel(natstest.Context(t, 5*time.Second), "op", "victim", "not needed", time.Now())
	require.NoError(t, err)
	waitTrue(t, ctx, "the cancel shows live as cancelled", statusOf("victim")+` === "cancelled"`)
	require.True(t, eval[bool](t, ctx, `window.__stay === true`), "without a reload")
	require.Equal(t, "badge status-cancelled", eval[string](t, ctx,
		`document.querySelector('tr[data-ref="victim"] [data-field="status"]').className`))
	screenshot(t, ctx, "phases")
	waitTrue(t, ctx, "a run-at that passes turns scheduled into pending", statusOf("soon")+` === "pending"`)
	require.True(t, eval[bool](t, ctx, `window.__stay === true`), "without a reload")

	step(t, ctx, "open the overview", chromedp.Navigate(e.Base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	for phase, n := range map[string]string{"scheduled": "1", "retrying": "1", "cancelled": "1", "failed": "0", "pending": "1"} {
		require.Equal(t, n, eval[string](t, ctx, `document.querySelector('[data-count="`+phase+`"]').textContent`), phase)
	}
}

// The task page's controls follow a live update: when the task a person
// looks at completes, Cancel goes away without a reload.
func TestBrowserControlsFollowLiveUpdate(t *testing.T) {
	ctx := browser(t)
	e := operatorEnv(t, func(e *dashtest.Env) { dashtest.Admit(t, e.Ledger, "job", nil) })
	step(t, ctx, "open the task", chromedp.Navigate(e.Base+"/task?key=job"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('a[href*="do=cancel"]')`), "a pending task offers Cancel")
	eval[bool](t, ctx, `window.__stay = true`)

	dashtest.RunTask(t, e.Ledger, "job", "w1", kvledger.StatusCompleted)
	waitTrue(t, ctx, "the badge says completed", `document.querySelector('.facts [data-field="status"]').textContent === "completed"`)
	waitTrue(t, ctx, "the timeline has the completion", `document.querySelector(".timeline").textContent.includes("ledger.completed")`)
	waitTrue(t, ctx, "Cancel is gone", `!document.querySelector('a[href*="do=cancel"]')`)
	require.True(t, eval[bool](t, ctx, `!!document.querySelector('a[href*="do=rm"]')`), "an ended task offers Remove")
	require.True(t, eval[bool](t, ctx, `window.__stay === true`), "without a reload")
	screenshot(t, ctx, "controls-after-live-update")
}

// A bulk action shows what would change and changes it only after the
// confirm: from the failed tasks' list, reopen both.
func TestBrowserBulkActionConfirm(t *testing.T) {
	ctx := browser(t)
	e := operatorEnv(t, func(e *dashtest.Env) {
		for _, k := range []string{"etl/a", "etl/b"} {
			dashtest.Admit(t, e.Ledger, k, nil)
			dashtest.RunTask(t, e.Ledger, k, "w1", kvledger.StatusFailed)
		}
		dashtest.Admit(t, e.Ledger, "etl/c", nil)
	})
	step(t, ctx, "open the failed tasks", chromedp.Navigate(e.Base+"/tasks?status=failed"), chromedp.WaitVisible(chromedp.CSS("#bulk-link")))
	click(t, ctx, "bulk action on these", "#bulk-link")
	step(t, ctx, "the bulk form", chromedp.WaitVisible(chromedp.CSS("#preview")))
	require.Equal(t, "failed", eval[string](t, ctx, `document.getElementById("b-status").value`), "the filter carried over")
	step(t, ctx, "choose reopen", chromedp.SetValue(chromedp.CSS("#b-do"), "reopen"))
	click(t, ctx, "show what would change", "#preview")
	step(t, ctx, "the dry run", chromedp.WaitVisible(chromedp.CSS("#bulk-rows")))
	require.Equal(t, 2, eval[int](t, ctx, `[...document.querySelectorAll("#bulk-rows td")].filter(td => td.textContent === "would reopen").length`))
	require.Equal(t, "reopen 2 task(s)", eval[string](t, ctx, `document.getElementById("confirm").textContent`))
	st, _, err := e.Ledger.State(natstest.Context(t, 5*time.Second), "etl/a")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, st.Status, "the dry run changed nothing")
	screenshot(t, ctx, "bulk-dry-run")

	click(t, ctx, "confirm", "#confirm")
	step(t, ctx, "back on the task list", chromedp.WaitVisible(chromedp.CSS("#flash")))
	require.Contains(t, eval[string](t, ctx, `document.getElementById("flash").textContent`), "reopen: 2 of 2 task(s) done")
	for _, k := range []kvledger.IdempotencyKey{"etl/a", "etl/b"} {
		st, _, err := e.Ledger.State(natstest.Context(t, 5*time.Second), k)
		require.NoError(t, err)
		require.Equal(t, kvledger.StatusPending, st.Status, string(k))
	}
}

// The workers page shows who runs what and follows it live: when the
// claimant's task completes, its claim lease is deleted and its row goes.
func TestBrowserWorkersPage(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "crunch", nil)
	}, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
	})
	sctx := natstest.Context(t, 10*time.Second)
	claimer := e.LeasedClaimer(t, "worker-7")

	step(t, ctx, "open the workers page", chromedp.Navigate(e.Base+"/workers"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	f, err := claimer.Claim(sctx, "worker", "crunch", "worker-7", 30*time.Second, time.Now())
	require.NoError(t, err)
	waitTrue(t, ctx, "the worker appears with its task", `(document.querySelector("#workers td.runs") || {}).textContent === "crunch "`)
	require.Equal(t, "worker-7", eval[string](t, ctx, `document.querySelector("#workers td.holder").textContent`))
	screenshot(t, ctx, "workers")

	// Completing deletes the claim's lease (kvledger's WithLeases with a
	// lease taker), so the claimant is no longer a live worker.
	require.NoError(t, claimer.Complete(sctx, "worker", "crunch", "worker-7", f, kvledger.StatusCompleted, time.Now()))
	waitTrue(t, ctx, "its row goes with its lease", `document.querySelector("#workers td.runs") === null && document.querySelector("#workers").textContent.includes("No live worker.")`)
}
