// Package browsertest holds the dashboard's real-browser tests: they drive
// a headless Chromium (Debian's chromium package, found on PATH) with
// chromedp against a dashboard served by internal/testkit/dashtest on an embedded
// nats-server, and check what a user sees change live: task rows, the
// dependency graph, a lease's countdown and its force release.
//
// It is a module of its own so that chromedp, a dependency of these tests
// alone, never reaches the go.mod of a program that imports natscoord. It
// holds no code but its tests.
//
// Without a browser the tests fail when CI=true and are skipped otherwise.
// Screenshots go to $NATSCOORD_ARTIFACTS, or to each test's temporary
// directory. With $NATSCOORD_DOCS_SCREENSHOT=docs/dashboard.png (a path
// relative to the repository root, or an absolute one),
// TestBrowserDocsScreenshot remakes the README's picture:
//
//	cd dashboard/browsertest && NATSCOORD_DOCS_SCREENSHOT=docs/dashboard.png go test -run DocsScreenshot .
package browsertest
