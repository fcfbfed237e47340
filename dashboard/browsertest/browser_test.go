package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browser starts Chromium for t and returns a tab's context. Without a
// Chromium on PATH it fails t when CI=true and skips it otherwise.
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

// click clicks the element sel finds, trying again when it was replaced
// between chromedp's lookup of the node and the click ("Could not find
// node with given id"): live tables are re-rendered from the event stream
// every second or so, which a person's click never notices but a
// scripted one, several protocol round trips long, can fall between.
func click(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var err error
	for range 5 {
		if err = chromedp.Do(sctx, chromedp.Click(chromedp.CSS(sel))); err == nil || sctx.Err() != nil {
			break
		}
	}
	require.NoError(t, err, what)
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
