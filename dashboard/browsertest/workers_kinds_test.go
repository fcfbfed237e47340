package browsertest

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A person sees, live on the overview, that a kind has pending tasks and
// no worker to run them, and sees the warning go when a worker for it
// starts; the Workers page lists an idle worker with its kinds.
func TestBrowserUnservedKindsAndIdleWorkers(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
	})
	step(t, ctx, "open the overview", chromedp.Navigate(e.Base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	// It waits for a need nobody admits: pending for good, never claimed.
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "mail-3", Kind: "mail", Needs: []kvledger.IdempotencyKey{"never"}})
	waitTrue(t, ctx, "the overview flags mail", `(document.querySelector("#unserved") || {textContent: ""}).textContent.includes("mail 1 pending")`)
	screenshot(t, ctx, "unserved-kind")

	e.StartWorker(t, "mailer", "mail", "digest")
	waitTrue(t, ctx, "the warning goes once a worker handles mail", `document.querySelector("#unserved") === null`)

	step(t, ctx, "open the workers page", chromedp.Navigate(e.Base+"/workers"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	waitTrue(t, ctx, "the idle worker with its kinds", `[...document.querySelectorAll("#workers tr.idle")].some(r => r.querySelector("td.owner").textContent === "mailer" && r.querySelector("td.kinds").textContent.trim() === "digest mail" && r.querySelector("td.runs").textContent === "idle")`)
	screenshot(t, ctx, "idle-worker")
}
