package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A person on the page of a task scheduled an hour ahead clicks Run now,
// confirms, and sees it pending, with no Run now button left.
func TestBrowserRunNow(t *testing.T) {
	ctx := browser(t)
	var led *kvledger.Ledger
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		led = e.Ledger
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Kind: "mail", Seq: 1, Delay: time.Hour})
	}, func(c *dashboard.Config) { c.Tasks = dashtest.OperatorActions{L: led} })
	step(t, ctx, "the task page", chromedp.Navigate(e.Base+"/task?key=later"), chromedp.WaitVisible(chromedp.CSS("#run-now")))
	click(t, ctx, "ask to run it now", "#run-now")
	step(t, ctx, "the confirmation page", chromedp.WaitVisible(chromedp.CSS("#confirm")))
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".confirm p").textContent`), "Run task later now")
	step(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	require.Contains(t, eval[string](t, ctx, `document.getElementById("flash").textContent`), "run-now later: done")
	waitTrue(t, ctx, "the button is gone once the task is ready", `!document.getElementById("run-now")`)
	screenshot(t, ctx, "run-now")

	s, _, err := e.Ledger.State(natstest.Context(t, 5*time.Second), "later")
	require.NoError(t, err)
	require.Equal(t, kvledger.PhasePending, s.Phase(time.Now()))
	require.Equal(t, kvledger.RunNowEvent, s.LastEvent)
}
