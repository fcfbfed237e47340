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

// A schedule stored while the workers page is open appears on it with
// its next period, and goes when it is removed, without a reload.
func TestBrowserWorkersPageFollowsSchedules(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, nil, nil)
	store := e.Ledger.Store().(*kvledger.KVStore)
	step(t, ctx, "open the workers page", chromedp.Navigate(e.Base+"/workers"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	eval[bool](t, ctx, `window.__stay = true`)
	row := `document.querySelector('tr[data-schedule="hourly"]')`

	sctx := natstest.Context(t, 10*time.Second)
	sc, err := store.CreateSchedule(sctx, kvledger.Schedule{Name: "hourly", Spec: "@hourly", Task: kvledger.ScheduleTask{Kind: "report"}})
	require.NoError(t, err)
	waitTrue(t, ctx, "the stored schedule shows live", row+` !== null`)
	next := sc.Next(time.Now()).UTC().Format("2006-01-02 15:04:05Z")
	require.Equal(t, next, eval[string](t, ctx, row+`.querySelector("td.next").textContent`))

	require.NoError(t, store.DeleteSchedule(sctx, "hourly", sc.Rev))
	waitTrue(t, ctx, "the removed schedule goes live", row+` === null`)
	require.True(t, eval[bool](t, ctx, `window.__stay === true`), "without a reload")
}
