package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, args, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case c := <-code:
			require.Equal(t, 0, c, "%v exits cleanly on cancel", args)
		case <-time.After(15 * time.Second):
			t.Errorf("%v did not stop", args)
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				lines <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case l := <-lines:
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("%v printed no line with %q", args, want)
		return ""
	}
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
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"demo", "--ui", "--ui-listen", "127.0.0.1:0", "--ui-wait", "10ms"}, pw, io.Discard)
		pw.Close()
	}()
	defer func() {
		cancel()
		select {
		case c := <-code:
			require.Equal(t, 0, c, "the demo ended as predicted and stopped on cancel")
		case <-time.After(20 * time.Second):
			t.Error("demo did not stop")
		}
	}()
	sc := bufio.NewScanner(pr)
	var addr string
	up := make(chan struct{})
	go func() {
		defer close(up)
		for sc.Scan() {
			l := sc.Text()
			if a := regexp.MustCompile(`dashboard at (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(l); a != nil {
				addr = a[1]
			}
			if strings.Contains(l, "the dashboard stays up") {
				go func() { _, _ = io.Copy(io.Discard, pr) }()
				return
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(40 * time.Second):
		t.Fatal("the demo did not finish")
	}
	require.NotEmpty(t, addr)
	resp, err := http.Get(addr)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), `data-count="completed">8<`, "the page shows the finished run")
	require.Contains(t, string(b), `data-count="blocked">3<`)
}
