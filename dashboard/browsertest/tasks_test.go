package browsertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/kvledger"
)

// statusOf is the JS expression for a task row's status text.
func statusOf(ref string) string {
	return `(document.querySelector('tr[data-ref="` + ref + `"] [data-field="status"]') || {}).textContent`
}

func TestBrowserRowsChangeStatusLive(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.BuildGraph(t, e.Ledger) }, nil)

	step(t, ctx, "open the task list", chromedp.Navigate(e.Base+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	require.Equal(t, "pending", eval[string](t, ctx, statusOf("package")))
	// A marker on window survives only if the page is never reloaded.
	eval[bool](t, ctx, `window.__stay = true`)

	// A worker: claim each task once its needs are done, lint fails.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, k := range []string{"fetch", "compile", "lint", "test"} {
			st := kvledger.StatusCompleted
			if k == "lint" {
				st = kvledger.StatusFailed
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			f, err := e.Ledger.Claim(ctx, "worker", kvledger.IdempotencyKey(k), "worker-1", time.Minute, time.Now())
			if err == nil {
				err = e.Ledger.Complete(ctx, "worker", kvledger.IdempotencyKey(k), "worker-1", f, st, time.Now())
			}
			cancel()
			if err != nil {
				t.Errorf("run %s: %v", k, err)
				return
			}
		}
	}()
	waitTrue(t, ctx, "fetch completes live", statusOf("fetch")+` === "completed"`)
	waitTrue(t, ctx, "lint fails live", statusOf("lint")+` === "failed"`)
	waitTrue(t, ctx, "package is blocked live", statusOf("package")+` === "blocked"`)
	waitTrue(t, ctx, "test completes live", statusOf("test")+` === "completed"`)
	<-done
	require.True(t, eval[bool](t, ctx, `window.__stay === true`), "the rows changed without a reload")
	require.Equal(t, "lint", eval[string](t, ctx,
		`document.querySelector('tr[data-ref="package"] [data-field="blocked_by"]').textContent`))
	require.Equal(t, "badge status-blocked", eval[string](t, ctx,
		`document.querySelector('tr[data-ref="package"] [data-field="status"]').className`))
	screenshot(t, ctx, "tasks-live")

	// The overview's counts follow too (its fragment reloads on events).
	step(t, ctx, "open the overview", chromedp.Navigate(e.Base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	dashtest.Admit(t, e.Ledger, "late", nil)
	waitTrue(t, ctx, "the total counts the late task", `document.querySelector('[data-count="total"]').textContent === "6"`)
	screenshot(t, ctx, "overview")
}

func TestBrowserDependencyGraph(t *testing.T) {
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.BuildGraph(t, e.Ledger)
		dashtest.RunTask(t, e.Ledger, "fetch", "w1", kvledger.StatusCompleted)
		dashtest.RunTask(t, e.Ledger, "lint", "w1", kvledger.StatusFailed)
	}, nil)
	step(t, ctx, "open the task and its graph",
		chromedp.Navigate(e.Base+"/task?key=compile"),
		chromedp.WaitVisible(chromedp.CSS("#live.on")),
		chromedp.Click(chromedp.CSS("#graph-link")),
		chromedp.WaitVisible(chromedp.CSS("svg.graph")),
	)
	require.Equal(t, 5, eval[int](t, ctx, `document.querySelectorAll("svg.graph g.node").length`))
	require.Contains(t, eval[string](t, ctx, `document.querySelector('svg.graph g.node.status-blocked').textContent`), "blocked by lint")
	require.Equal(t, "pending · ready", eval[string](t, ctx, `document.querySelector('svg.graph g.focus text.why').textContent`))
	// Boxes are laid out left to right along the needs.
	require.True(t, eval[bool](t, ctx, `(() => {
		const x = r => document.querySelector('svg.graph g[data-ref="'+r+'"] rect').getBBox().x;
		return x("fetch") < x("compile") && x("compile") < x("test") && x("test") < x("package");
	})()`))
	screenshot(t, ctx, "graph")

	// It redraws live: compile completes.
	dashtest.RunTask(t, e.Ledger, "compile", "w2", kvledger.StatusCompleted)
	waitTrue(t, ctx, "compile turns completed in the graph", `!!document.querySelector('svg.graph g.status-completed[data-ref="compile"]')`)
	screenshot(t, ctx, "graph-live")
	// Following a node opens its task.
	click(t, ctx, "follow a node", `svg.graph g[data-ref="package"]`)
	step(t, ctx, "the node's task", chromedp.WaitVisible(chromedp.CSS("dl.facts")))
	require.True(t, strings.HasSuffix(eval[string](t, ctx, `location.search`), "key=package"))
}
