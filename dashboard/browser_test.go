package dashboard_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// Browser tests drive a real headless Chromium (Debian's chromium package,
// found on PATH) with chromedp. Without a browser they fail under CI=true
// and are skipped elsewhere. Screenshots go to $NATSCOORD_ARTIFACTS, or
// to the test's temporary directory; $NATSCOORD_DOCS_SCREENSHOT names a
// file that receives the README's screenshot.

// browser starts Chromium for t and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium on PATH: CI must install it (apt-get install -y chromium)")
		}
		t.Skip("no Chromium on PATH (apt-get install -y chromium); set CI=true to make this a failure")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // Chromium refuses to run headless as root without it
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not carry a timeout.
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// step runs actions with a bound.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(sctx, actions...), what)
}

// waitTrue polls a JavaScript predicate in the page until it holds.
func waitTrue(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := chromedp.Run(sctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second)))
	require.NoError(t, err, what)
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// screenshot saves the viewport as name.png among the artifacts.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv("NATSCOORD_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot %s", path)
	return path
}

// statusOf is the JS expression for a task row's status text.
func statusOf(ref string) string {
	return `(document.querySelector('tr[data-ref="` + ref + `"] [data-field="status"]') || {}).textContent`
}

func TestBrowserRowsChangeStatusLive(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, func(e *env) { buildGraph(t, e.ledger) }, nil)

	step(t, ctx, "open the task list", chromedp.Navigate(e.base+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
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
			f, err := e.ledger.Claim(ctx, "worker", kvledger.IdempotencyKey(k), "worker-1", time.Minute, time.Now())
			if err == nil {
				err = e.ledger.Complete(ctx, "worker", kvledger.IdempotencyKey(k), "worker-1", f, st, time.Now())
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
	step(t, ctx, "open the overview", chromedp.Navigate(e.base+"/"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	admit(t, e.ledger, "late", nil)
	waitTrue(t, ctx, "the total counts the late task", `document.querySelector('[data-count="total"]').textContent === "6"`)
	screenshot(t, ctx, "overview")
}

func TestBrowserDependencyGraph(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t, func(e *env) {
		buildGraph(t, e.ledger)
		run(t, e.ledger, "fetch", "w1", kvledger.StatusCompleted)
		run(t, e.ledger, "lint", "w1", kvledger.StatusFailed)
	}, nil)
	step(t, ctx, "open the task and its graph",
		chromedp.Navigate(e.base+"/task?key=compile"),
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
	run(t, e.ledger, "compile", "w2", kvledger.StatusCompleted)
	waitTrue(t, ctx, "compile turns completed in the graph", `!!document.querySelector('svg.graph g.status-completed[data-ref="compile"]')`)
	screenshot(t, ctx, "graph-live")
	// Following a node opens its task.
	step(t, ctx, "follow a node", chromedp.Click(chromedp.CSS(`svg.graph g[data-ref="package"]`)), chromedp.WaitVisible(chromedp.CSS("dl.facts")))
	require.True(t, strings.HasSuffix(eval[string](t, ctx, `location.search`), "key=package"))
}

func TestBrowserForceReleaseLease(t *testing.T) {
	ctx := browser(t)
	var g *kvlease.Guard
	e := newEnv(t, func(e *env) {
		var ok bool
		var err error
		g, ok, err = e.leases.TryAcquireKey(holdCtx, "jobs.nightly", 20*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, g.StartRenewing(time.Second))
	}, nil)
	step(t, ctx, "open leases", chromedp.Navigate(e.base+"/coord"), chromedp.WaitVisible(chromedp.CSS(`tr[data-lease="jobs.nightly"]`)))
	waitTrue(t, ctx, "the countdown ticks", `/^\d+\.\d s$/.test(document.querySelector('tr[data-lease="jobs.nightly"] td.ttl').textContent)`)
	require.Equal(t, "holder-1", eval[string](t, ctx, `document.querySelector('tr[data-lease="jobs.nightly"] td.holder').textContent`))
	screenshot(t, ctx, "leases")

	step(t, ctx, "ask to force-release",
		chromedp.Click(chromedp.CSS(`tr[data-lease="jobs.nightly"] a.button.danger`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
	)
	require.Contains(t, eval[string](t, ctx, `document.querySelector(".confirm p").textContent`), "held by holder-1")
	select {
	case <-g.Done():
		t.Fatal("asking released the lease before confirmation")
	default:
	}
	step(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	waitClosed(t, g.Done(), "the holder learns it lost the lease")
	require.ErrorIs(t, context.Cause(g.Context()), kvlease.ErrLost)
	require.Contains(t, eval[string](t, ctx, `document.getElementById("flash").textContent`), "force-release jobs.nightly: done")
	waitTrue(t, ctx, "the row is gone", `!document.querySelector('tr[data-lease="jobs.nightly"]')`)
	require.Contains(t, eval[string](t, ctx, `document.getElementById("action-log").textContent`), "was held by holder-1")
	screenshot(t, ctx, "lease-released")
}

// TestBrowserDocsScreenshot makes the README's picture: a build pipeline
// in the middle of its run. It runs only when $NATSCOORD_DOCS_SCREENSHOT
// names the file to write.
func TestBrowserDocsScreenshot(t *testing.T) {
	out := os.Getenv("NATSCOORD_DOCS_SCREENSHOT")
	if out == "" {
		t.Skip("set NATSCOORD_DOCS_SCREENSHOT=docs/dashboard.png to make the README's screenshot")
	}
	ctx := browser(t)
	e := newEnv(t, func(e *env) {
		for _, n := range []struct {
			k     string
			needs []string
		}{
			{"fetch-src", nil}, {"fetch-deps", nil}, {"gen-code", []string{"fetch-src"}}, {"lint", []string{"fetch-src"}},
			{"compile", []string{"fetch-src", "fetch-deps"}}, {"unit-test", []string{"compile"}},
			{"integ-test", []string{"compile", "gen-code"}}, {"docs", []string{"gen-code"}},
			{"package", []string{"unit-test", "integ-test", "lint"}}, {"site", []string{"docs"}},
			{"publish", []string{"package"}}, {"announce", []string{"publish", "site"}},
		} {
			admit(t, e.ledger, n.k, map[string]any{"kind": "build"}, n.needs...)
		}
		for _, k := range []string{"fetch-src", "fetch-deps", "gen-code", "lint", "compile", "unit-test"} {
			run(t, e.ledger, k, "worker-2", kvledger.StatusCompleted)
		}
		run(t, e.ledger, "integ-test", "worker-3", kvledger.StatusFailed)
		_, err := e.ledger.Claim(natstest.Context(t, 5*time.Second), "worker", "docs", "worker-1", time.Minute, time.Now())
		require.NoError(t, err)
	}, nil)
	step(t, ctx, "open the graph", chromedp.EmulateViewport(1320, 400),
		chromedp.Navigate(e.base+"/graph?key=compile"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	b, err := os.ReadFile(screenshot(t, ctx, "docs"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, b, 0o644))
}
