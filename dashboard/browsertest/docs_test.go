package browsertest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// repoRoot is the core module's directory, two levels above this one.
const repoRoot = "../.."

// docsScreenshotPath is where $NATSCOORD_DOCS_SCREENSHOT asks the README's
// picture to go: a relative path is taken from the repository root (so
// docs/dashboard.png names the README's file whichever directory the test
// runs in), an absolute one as it stands. It is empty when unset.
func docsScreenshotPath() string {
	out := os.Getenv("NATSCOORD_DOCS_SCREENSHOT")
	if out == "" || filepath.IsAbs(out) {
		return out
	}
	return filepath.Join(repoRoot, out)
}

// TestBrowserDocsScreenshot makes the README's picture: a build pipeline
// in the middle of its run. It runs only when $NATSCOORD_DOCS_SCREENSHOT
// names the file to write.
func TestBrowserDocsScreenshot(t *testing.T) {
	out := docsScreenshotPath()
	if out == "" {
		t.Skip("set NATSCOORD_DOCS_SCREENSHOT=docs/dashboard.png to remake the README's screenshot")
	}
	ctx := browser(t)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
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
			dashtest.Admit(t, e.Ledger, n.k, map[string]any{"kind": "build"}, n.needs...)
		}
		for _, k := range []string{"fetch-src", "fetch-deps", "gen-code", "lint", "compile", "unit-test"} {
			dashtest.RunTask(t, e.Ledger, k, "worker-2", kvledger.StatusCompleted)
		}
		dashtest.RunTask(t, e.Ledger, "integ-test", "worker-3", kvledger.StatusFailed)
		_, err := e.Ledger.Claim(natstest.Context(t, 5*time.Second), "worker", "docs", "worker-1", time.Minute, time.Now())
		require.NoError(t, err)
	}, nil)
	step(t, ctx, "open the graph", chromedp.EmulateViewport(1320, 400),
		chromedp.Navigate(e.Base+"/graph?key=compile"), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	b, err := os.ReadFile(screenshot(t, ctx, "docs"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, b, 0o644))
}
