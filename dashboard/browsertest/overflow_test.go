package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
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

// long is a word with no break opportunity: a key, holder or error token
// as long as real ones get (tenant, pipeline and step in one key).
func long(prefix string) string {
	return prefix + strings.Repeat("_tenant_acme_europe_west_nightly_reconciliation", 4)
}

// Every page fits a 1280 px wide window with the data that used to push
// it sideways (the Workers and Leases pages overflowed at 1400 px and the
// Force release button was cut off): long keys, holders, lease keys and
// errors, and the tasks table's many columns. The window's document is
// no wider than the window, the Force release button is inside it, and a
// long error in the attempts table gets most of the page's width.
func TestBrowserNoHorizontalOverflowAt1280(t *testing.T) {
	ctx := browser(t)
	failing, claimed, sched := long("failing"), long("claimed"), long("s")[:128]
	longErr := "dial tcp: " + long("lookup") + ": connection refused\n" + strings.Repeat("a line of a stack trace that goes on ", 20)
	var led *kvledger.Ledger
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		led = e.Ledger
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: kvledger.IdempotencyKey(failing), Kind: "flaky", MaxAttempts: 3,
			Task: map[string]any{"customer": long("customer"), "note": strings.Repeat("word ", 200)}})
		e.RunAttempt(t, failing, long("worker"), time.Hour, func(context.Context, *worker.Task) error { return errors.New(longErr) })
		// Short names and a long error of short words, which never
		// overflowed: the layout alone decides the error's width.
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "short", Kind: "short", MaxAttempts: 3})
		e.RunAttempt(t, "short", "w1", time.Hour, func(context.Context, *worker.Task) error {
			return errors.New(strings.Repeat("a line of a stack trace that goes on ", 30))
		})
		dashtest.Admit(t, e.Ledger, claimed, map[string]any{"kind": long("kind")}, failing)
		dashtest.Admit(t, e.Ledger, long("ready"), nil)
		_, err := e.Ledger.Store().(*kvledger.KVStore).CreateSchedule(natstest.Context(t, 5*time.Second),
			kvledger.Schedule{Name: sched, Spec: "@hourly", Task: kvledger.ScheduleTask{Kind: long("kind")}})
		require.NoError(t, err)
		g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs."+long("lease"), 30*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, g.StartRenewing(time.Second))
	}, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
		c.Tasks = dashtest.OperatorActions{L: led}
	})
	// A claimant with a long holder id: a worker row and a lease row.
	holder := (long("host") + ":4242:" + long("nuid"))[:250]
	claimer := e.LeasedClaimer(t, holder)
	ready := long("ready")
	_, err := claimer.Claim(natstest.Context(t, 10*time.Second), "worker", kvledger.IdempotencyKey(ready), kvledger.OwnerID(holder), time.Minute, time.Now())
	require.NoError(t, err)

	// An idle worker with long kinds: a presence row and the flag of a
	// kind with pending tasks and no worker (the pending one's kind).
	e.StartWorker(t, long("idle")[:120], long("kind-a"), long("kind-b"))

	step(t, ctx, "a 1280 px window", chromedp.EmulateViewport(1280, 900))
	var over []string // every page measured, then the ones too wide named
	for i, path := range []string{
		"/", "/tasks", "/task?key=" + url.QueryEscape(failing), "/task?key=" + url.QueryEscape(ready), "/task?key=short",
		"/workers", "/coord", "/events", "/graph?key=" + url.QueryEscape(claimed),
		"/bulk?do=cancel&status=pending",
		"/confirm?do=force-release&bucket=" + kvlease.DefaultBucket + "&key=" + url.QueryEscape("jobs."+long("lease")),
	} {
		step(t, ctx, "open "+path, chromedp.Navigate(e.Base+path), chromedp.WaitVisible(chromedp.CSS("#live.on")))
		// The fragments reload once the stream says hello: measure the
		// page as it is after that, with every live row in place.
		switch {
		case path == "/workers":
			waitTrue(t, ctx, "the worker's rows", `document.querySelector("#workers td.runs a") !== null && document.querySelector("#workers tr.idle") !== null`)
		case path == "/coord":
			waitTrue(t, ctx, "the lease rows", `document.querySelectorAll("#coord-lease tr[data-lease]").length === 3`)
		case path == "/":
			waitTrue(t, ctx, "the unserved kinds", `document.querySelector("#unserved") !== null`)
		}
		width := eval[int](t, ctx, `document.documentElement.scrollWidth`)
		inner := eval[int](t, ctx, `window.innerWidth`)
		t.Logf("%s: document %d px wide in a %d px window", path, width, inner)
		shot := screenshot(t, ctx, fmt.Sprintf("w1280-%d", i))
		if width > inner {
			t.Logf("%s: these end past the window: %s", shot, eval[string](t, ctx, `[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth).slice(0, 5).map(e => e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right)).join(" | ")`))
			over = append(over, path)
		}
		if path == "/task?key=short" {
			// Readable: the attempts table gives a long error the room
			// the page has, not a narrow strip beside the other columns.
			errWidth := eval[float64](t, ctx, `document.querySelector("#attempt-rows td.err").getBoundingClientRect().width`)
			t.Logf("the attempt's error is %.0f px wide", errWidth)
			if errWidth < 0.5*float64(inner) {
				over = append(over, fmt.Sprintf("the attempt's error squeezed into %.0f px", errWidth))
			}
		}
		if path == "/coord" {
			right := eval[float64](t, ctx, `Math.max(...[...document.querySelectorAll("#coord-lease a.button.danger")].map(b => b.getBoundingClientRect().right))`)
			t.Logf("the Force release buttons end at %.0f px", right)
			if right > float64(inner) {
				over = append(over, "the Force release button")
			}
		}
	}
	require.Empty(t, over, "wider than a 1280 px window, or squeezed")
}
