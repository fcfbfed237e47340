package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvlock"
)

// A lock taken after the dashboard started (its set-up context ended,
// as natscoord ui's does) appears on the open page, and leaves it when
// it is released.
func TestBrowserLocksTakenLaterAppearAndLeave(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, nil, nil)
	step(t, ctx, "open leases", chromedp.Navigate(e.Base+"/coord"), chromedp.WaitVisible(chromedp.CSS("#live.on")))

	lctx := natstest.Context(t, 20*time.Second)
	lk, err := kvlock.New(lctx, e.Node.NewJS(t), kvlock.Config{Name: "app", Holder: "late-locker"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lk.Close(context.Background()) })
	lock, ok, err := lk.TryAcquire(lctx, "orders-7")
	require.NoError(t, err)
	require.True(t, ok)
	sel := `tr[data-lease="app.l.orders-7"]`
	waitTrue(t, ctx, "the lock appears", fmt.Sprintf(`!!document.querySelector('%s')`, sel))
	waitTrue(t, ctx, "its countdown ticks", fmt.Sprintf(`/^\d+\.\d s$/.test(document.querySelector('%s td.ttl').textContent)`, sel))
	require.Equal(t, "late-locker", eval[string](t, ctx, fmt.Sprintf(`document.querySelector('%s td.holder').textContent`, sel)))
	screenshot(t, ctx, "lock-taken-later")
	require.NoError(t, lock.Release(lctx))
	waitTrue(t, ctx, "the row is gone", fmt.Sprintf(`!document.querySelector('%s')`, sel))
}

// cancelActions cancels with the ledger's operator Cancel.
type cancelActions struct{ l *kvledger.Ledger }

func (a cancelActions) Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	_, err := a.l.Cancel(ctx, actor, key, "from the browser test", time.Now(), kvledger.AtRevision(rev))
	return err
}

func (a cancelActions) Reopen(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	_, err := a.l.Reopen(ctx, actor, key, time.Now(), kvledger.AtRevision(rev))
	return err
}

// A person who opens task a:b from the list and cancels it cancels a:b,
// not the task named by the key's escaped spelling.
func TestBrowserCancelReachesTheTaskShown(t *testing.T) {
	ctx := browser(t)
	var acts cancelActions
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		acts.l = e.Ledger
		dashtest.Admit(t, e.Ledger, "a%3Ab", nil)
		dashtest.Admit(t, e.Ledger, "a:b", nil)
	}, func(c *dashboard.Config) { c.Tasks = acts })
	step(t, ctx, "open tasks", chromedp.Navigate(e.Base+"/tasks"), chromedp.WaitVisible(chromedp.CSS(`tr[data-ref="a%3Ab"]`)))
	click(t, ctx, "open task a:b", `tr[data-ref="a%3Ab"] td a`)
	step(t, ctx, "the task page", chromedp.WaitVisible(chromedp.CSS("#graph-link")))
	require.Equal(t, "Task a:b", eval[string](t, ctx, `document.querySelector("h1").textContent`))

	click(t, ctx, "graph link", "#graph-link")
	step(t, ctx, "the graph page", chromedp.WaitVisible(chromedp.CSS("#graph")))
	require.Equal(t, "Dependencies of a:b", eval[string](t, ctx, `document.querySelector("h1").textContent`))
	step(t, ctx, "back", chromedp.Navigate(e.Base+"/task?key="+url.QueryEscape("a:b")), chromedp.WaitVisible(chromedp.CSS("#graph-link")))

	click(t, ctx, "ask to cancel", `a.button.danger`)
	step(t, ctx, "the confirmation page", chromedp.WaitVisible(chromedp.CSS("#confirm")))
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".confirm p").textContent`), "Cancel task a:b so")
	step(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	require.Contains(t, eval[string](t, ctx, `document.getElementById("flash").textContent`), "cancel a:b: done")
	waitTrue(t, ctx, "the page shows it cancelled", `document.querySelector('[data-field="status"]').textContent === "cancelled"`)
	screenshot(t, ctx, "cancelled-a-colon-b")

	sctx := natstest.Context(t, 5*time.Second)
	s, _, err := e.Ledger.State(sctx, "a:b")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, s.Status)
	s, _, err = e.Ledger.State(sctx, "a%3Ab")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, s.Status, "the other task is untouched")
}

// With NATS gone, the badge stops saying "live".
func TestBrowserBadgeSaysWhenNATSIsUnreachable(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, nil, nil)
	step(t, ctx, "open the overview", chromedp.Navigate(e.Base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	require.Equal(t, "live", eval[string](t, ctx, `document.getElementById("live").textContent`))
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.Node.Server.Shutdown(sctx))
	waitTrue(t, ctx, "the badge says NATS is unreachable", `document.getElementById("live").textContent === "NATS unreachable"`)
	step(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#nats-down")))
	waitTrue(t, ctx, "still not live after a reload", `document.getElementById("live").textContent === "NATS unreachable"`)
	screenshot(t, ctx, "nats-unreachable")
}
