package main

import (
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

func TestServeUI(t *testing.T) {
	line := startLong(t, []string{"serve", "--port", "0", "--data-dir", t.TempDir(), "--ui", "--ui-listen", "127.0.0.1:0"}, "dashboard at")
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	require.NotEmpty(t, addr, line)
	resp, err := http.Get(addr)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), "natscoord_leases", "an empty server gets the default buckets")
}

func TestUIServesTheDashboard(t *testing.T) {
	c, _ := newCLI(t)
	line := startUI(t, c.url, "--listen", "127.0.0.1:0", "--create", "--read-only")
	require.Contains(t, line, "(loopback; no authentication (loopback only); read-only)")
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	require.NotEmpty(t, addr, line)
	resp, err := http.Get(addr)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), "read-only")
	resp, err = http.Get(addr + "metrics")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), "natscoord_ledger_tasks")
}

func TestUINonLoopbackWithTokenSaysSo(t *testing.T) {
	c, _ := newCLI(t)
	line := startUI(t, c.url, "--listen", "0.0.0.0:0", "--create", "--auth-token", "tok")
	require.Contains(t, line, "NOT loopback")
	require.Contains(t, line, "token required")
	require.False(t, regexp.MustCompile(`\btok\b`).MatchString(line), "the token itself is not printed")
	port := regexp.MustCompile(`:(\d+)/`).FindStringSubmatch(line)
	require.Len(t, port, 2, line)
	resp, err := http.Get("http://127.0.0.1:" + port[1] + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestDemoUIKeepsThePageUp(t *testing.T) {
	demo := startRun(t, "demo", "--ui", "--ui-listen", "127.0.0.1:0", "--ui-wait", "10ms")
	t.Cleanup(func() { require.Equal(t, 0, demo.stop(t).code, "the demo ended as predicted and stopped on cancel") })
	m := regexp.MustCompile(`dashboard at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(demo.line(t, 40*time.Second, "dashboard at "))
	require.Len(t, m, 2)
	demo.line(t, 40*time.Second, "the dashboard stays up")
	resp, err := http.Get(m[1])
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), `data-count="completed">8<`, "the page shows the finished run")
	require.Contains(t, string(b), `data-count="blocked">3<`)
}
