package browsertest

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/kvledger"
)

// The overview draws the tasks finished per minute and the ready backlog
// per kind as charts, labelled for a screen reader, within a 1280 px
// window, and moves them live: a completion while the page is open shows
// in the current minute's bar without a reload.
func TestBrowserOverviewCharts(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		for _, k := range []string{"m1", "m2", "m3", "m4"} {
			dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: kvledger.IdempotencyKey(k), Kind: "mail"})
		}
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "s1", Kind: "sms"})
		dashtest.RunTask(t, e.Ledger, "m1", "w1", kvledger.StatusCompleted)
		dashtest.RunTask(t, e.Ledger, "s1", "w1", kvledger.StatusFailed)
	}, nil)
	step(t, ctx, "a 1280 px window", chromedp.EmulateViewport(1280, 900))
	step(t, ctx, "open the overview", chromedp.Navigate(e.Base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	waitTrue(t, ctx, "the finished chart's bars", `document.querySelectorAll("#chart-finished rect.c-completed").length === 1 && document.querySelectorAll("#chart-finished rect.c-failed").length === 1`)
	waitTrue(t, ctx, "the backlog chart's bar", `document.querySelector("#chart-backlog g.col:last-of-type") !== null && [...document.querySelectorAll("#chart-backlog g.col")].pop().dataset.n === "3"`)
	require.Equal(t, "Tasks finished per minute, last hour", eval[string](t, ctx,
		`document.getElementById(document.querySelector("#chart-finished").getAttribute("aria-labelledby").split(" ")[0]).textContent`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector("#chart-backlog").parentElement.querySelector(".legend").textContent`), "mail")
	// The charts are drawn, at their panels' width, and the page is no
	// wider than the window.
	require.Greater(t, eval[float64](t, ctx, `document.querySelector("#chart-finished").getBoundingClientRect().height`), 100.0)
	require.True(t, eval[bool](t, ctx, `[...document.querySelectorAll("svg.chart")].every(s => s.getBoundingClientRect().right <= s.parentElement.getBoundingClientRect().right)`))
	require.LessOrEqual(t, eval[int](t, ctx, `document.documentElement.scrollWidth`), eval[int](t, ctx, `window.innerWidth`))
	screenshot(t, ctx, "overview-charts")

	dashtest.RunTask(t, e.Ledger, "m2", "w1", kvledger.StatusCompleted)
	waitTrue(t, ctx, "the completion joins this minute's bar", `[...document.querySelectorAll("#chart-finished g.col")].pop().dataset.n === "2 1" || [...document.querySelectorAll("#chart-finished g.col")].pop().dataset.n === "1 0"`)
	waitTrue(t, ctx, "the backlog's bar follows", `[...document.querySelectorAll("#chart-backlog g.col")].pop().dataset.n === "2"`)
}
