package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestUIRefusesNonLoopbackWithoutAuth(t *testing.T) {
	c, _ := newCLI(t)
	line := c.fail("ui", "--listen", "0.0.0.0:0")
	require.Contains(t, line, "not a loopback address")
	require.Contains(t, line, "--auth-token")
	require.Contains(t, c.fail("ui", "--listen", "nonsense"), "--listen")
	require.Contains(t, c.fail("ui", "--listen", "127.0.0.1:0", "--basic-auth", "nopass"), "user:password")
	require.Contains(t, c.fail("ui", "--listen", "127.0.0.1:0"), `ledger bucket "natscoord_ledger"`, "looking creates nothing")
}

// startUI runs `natscoord ui` until the test ends and returns its start
// line.
func startUI(t *testing.T, url string, args ...string) string {
	t.Helper()
	return startLong(t, append([]string{"--server", url, "ui"}, args...), "dashboard at")
}

// startLong runs a command that serves until cancelled, stops it when the
// test ends (requiring exit 0), and returns its first output line that
// contains want.
func startLong(t *testing.T, args []string, want string) string {
	t.Helper()
	b := startRun(t, args...)
	t.Cleanup(func() { require.Equal(t, 0, b.stop(t).code, "%v exits cleanly on cancel", args) })
	return b.line(t, 20*time.Second, want)
}

// dashboardAddr is the loopback dashboard URL a start line names.
func dashboardAddr(t *testing.T, line string) string {
	t.Helper()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	require.NotEmpty(t, addr, line)
	return addr
}

// get fetches url and returns its status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServeUI(t *testing.T) {
	line := startLong(t, []string{"serve", "--port", "0", "--data-dir", t.TempDir(), "--ui", "--ui-listen", "127.0.0.1:0"}, "dashboard at")
	code, page := get(t, dashboardAddr(t, line))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "natscoord_leases", "an empty server gets the default buckets")
}

func TestUIServesTheDashboard(t *testing.T) {
	c, _ := newCLI(t)
	line := startUI(t, c.url, "--listen", "127.0.0.1:0", "--create", "--read-only")
	require.Contains(t, line, "(loopback; no authentication (loopback only); read-only)")
	addr := dashboardAddr(t, line)
	code, page := get(t, addr)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "read-only")
	_, metrics := get(t, addr+"metrics")
	require.Contains(t, metrics, "natscoord_ledger_tasks")
}

func TestUINonLoopbackWithTokenSaysSo(t *testing.T) {
	c, _ := newCLI(t)
	line := startUI(t, c.url, "--listen", "0.0.0.0:0", "--create", "--auth-token", "tok")
	require.Contains(t, line, "NOT loopback")
	require.Contains(t, line, "token required")
	require.False(t, regexp.MustCompile(`\btok\b`).MatchString(line), "the token itself is not printed")
	port := regexp.MustCompile(`:(\d+)/`).FindStringSubmatch(line)
	require.Len(t, port, 2, line)
	code, _ := get(t, "http://127.0.0.1:"+port[1]+"/")
	require.Equal(t, http.StatusUnauthorized, code)
}

func TestDemoUIKeepsThePageUp(t *testing.T) {
	demo := startRun(t, "demo", "--ui", "--ui-listen", "127.0.0.1:0", "--ui-wait", "10ms")
	t.Cleanup(func() { require.Equal(t, 0, demo.stop(t).code, "the demo ended as predicted and stopped on cancel") })
	addr := dashboardAddr(t, demo.line(t, 40*time.Second, "dashboard at "))
	demo.line(t, 40*time.Second, "the dashboard stays up")
	// The page's view follows the ledger's watch, which may deliver the
	// last writes a moment after the demo's own report: wait for them.
	var page string
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, page = get(t, addr)
		return strings.Contains(page, `data-count="completed">8<`) && strings.Contains(page, `data-count="blocked">3<`)
	}, "the page shows the finished run")
}

// The task page shows a task's arguments, and `ui --hide-payloads` keeps
// them off it.
func TestUIHidePayloads(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "login", "--seq", "1", "--create", "--task", `{"password":"hunter2"}`)
	_, page := get(t, dashboardAddr(t, startUI(t, c.url, "--listen", "127.0.0.1:0"))+"task?key=login")
	require.Contains(t, page, "hunter2", "shown by default")
	code, page := get(t, dashboardAddr(t, startUI(t, c.url, "--listen", "127.0.0.1:0", "--hide-payloads"))+"task?key=login")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, page, "hunter2")
	require.Contains(t, page, `id="payloads-hidden"`)
}
