package browsertest

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestBrowserForceReleaseLease(t *testing.T) {
	ctx := browser(t)
	var g *kvlease.Guard
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		var ok bool
		var err error
		g, ok, err = e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.nightly", 20*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, g.StartRenewing(time.Second))
	}, nil)
	step(t, ctx, "open leases", chromedp.Navigate(e.Base+"/coord"), chromedp.WaitVisible(chromedp.CSS(`tr[data-lease="jobs.nightly"]`)))
	waitTrue(t, ctx, "the countdown ticks", `/^\d+\.\d s$/.test(document.querySelector('tr[data-lease="jobs.nightly"] td.ttl').textContent)`)
	require.Equal(t, "holder-1", eval[string](t, ctx, `document.querySelector('tr[data-lease="jobs.nightly"] td.holder').textContent`))
	screenshot(t, ctx, "leases")

	click(t, ctx, "ask to force-release", `tr[data-lease="jobs.nightly"] a.button.danger`)
	step(t, ctx, "the confirmation page", chromedp.WaitVisible(chromedp.CSS("#confirm")))
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".confirm p").textContent`), "held by holder-1")
	select {
	case <-g.Done():
		t.Fatal("asking released the lease before confirmation")
	default:
	}
	step(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	natstest.WaitClosed(t, g.Done(), 10*time.Second, "the holder learns it lost the lease")
	require.ErrorIs(t, context.Cause(g.Context()), kvlease.ErrLost)
	require.Contains(t, eval[string](t, ctx, `document.getElementById("flash").textContent`), "force-release jobs.nightly: done")
	waitTrue(t, ctx, "the row is gone", `!document.querySelector('tr[data-lease="jobs.nightly"]')`)
	require.Contains(t, eval[string](t, ctx, `document.getElementById("action-log").textContent`), "was held by holder-1")
	screenshot(t, ctx, "lease-released")
}
