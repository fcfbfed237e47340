package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// The overview's Pause button pauses the kind (stored in the ledger), the
// row says so, and its Resume button resumes it; a pause made elsewhere
// shows on the open page without a reload.
func TestBrowserOverviewPauseToggle(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "m1", Seq: 1, Kind: "mail", Task: []byte(`{}`)})
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "s1", Seq: 1, Kind: "sms", Task: []byte(`{}`)})
	}, nil)
	store := e.Ledger.Store().(*kvledger.KVStore)
	sctx := natstest.Context(t, 10*time.Second)
	step(t, ctx, "open the overview", chromedp.Navigate(e.Base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	mail := `document.querySelector('tr[data-kind="mail"]')`

	click(t, ctx, "pause mail", `tr[data-kind="mail"] button[data-toggle="pause"]`)
	step(t, ctx, "the page after the post shows mail paused", chromedp.WaitVisible(chromedp.CSS(`tr[data-kind="mail"].paused`)), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	require.Contains(t, eval[string](t, ctx, `location.search`), "done=pause")
	_, found, err := store.LoadPause(sctx, "mail")
	require.NoError(t, err)
	require.True(t, found, "the pause is stored in the ledger")

	eval[bool](t, ctx, `window.__stay = true`)
	_, err = store.PauseKind(sctx, kvledger.Pause{Kind: "sms", Schedules: true})
	require.NoError(t, err)
	sms := `document.querySelector('tr[data-kind="sms"]')`
	waitTrue(t, ctx, "a pause made elsewhere shows live", sms+`.classList.contains("paused") && `+sms+`.textContent.includes("its schedules too")`)
	require.True(t, eval[bool](t, ctx, `window.__stay === true`), "without a reload")

	click(t, ctx, "resume mail", `tr[data-kind="mail"] button[data-toggle="resume"]`)
	step(t, ctx, "the page after the post shows mail running", chromedp.WaitVisible(chromedp.CSS(`tr[data-kind="mail"]:not(.paused) button[data-toggle="pause"]`)))
	require.False(t, eval[bool](t, ctx, mail+`.classList.contains("paused")`))
	_, found, err = store.LoadPause(sctx, "mail")
	require.NoError(t, err)
	require.False(t, found, "resumed")
}
