package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// getWith fetches url with client c and the header hdr.
func getWith(t *testing.T, c *http.Client, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Secrets need not be in argv: the token comes from a file, basic auth
// from the environment.
func TestUISecretsFromFileAndEnvironment(t *testing.T) {
	c, _ := newCLI(t)
	tokFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokFile, []byte("file-token-123\n"), 0o600))
	line := startUI(t, c.url, "--listen", "127.0.0.1:0", "--create", "--auth-token-file", tokFile)
	require.Contains(t, line, "token required")
	addr := dashboardAddr(t, line)
	code, _ := get(t, addr)
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = getWith(t, http.DefaultClient, addr, map[string]string{"Authorization": "Bearer file-token-123"})
	require.Equal(t, http.StatusOK, code)

	t.Setenv(envUIBasicAuth, "ops:env-pass")
	line = startUI(t, c.url, "--listen", "127.0.0.1:0", "--create")
	require.Contains(t, line, "basic auth required (user ops)")
	require.NotContains(t, line, "env-pass")
	addr = dashboardAddr(t, line)
	code, _ = get(t, addr)
	require.Equal(t, http.StatusUnauthorized, code)
	req, err := http.NewRequest(http.MethodGet, addr, nil)
	require.NoError(t, err)
	req.SetBasicAuth("ops", "env-pass")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Contains(t, c.fail("ui", "--listen", "127.0.0.1:0", "--auth-token", "x", "--auth-token-file", tokFile), "--auth-token and --auth-token-file exclude each other")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	require.Contains(t, c.fail("ui", "--listen", "127.0.0.1:0", "--basic-auth-file", empty), "empty")
}

// The dashboard serves HTTPS with --https-cert and --https-key, and its
// cookie is then Secure.
func TestUIServesHTTPS(t *testing.T) {
	c, _ := newCLI(t)
	pki := natstest.NewPKI(t)
	require.Contains(t, c.fail("ui", "--listen", "127.0.0.1:0", "--https-cert", pki.CertFile), "go together")
	line := startUI(t, c.url, "--listen", "127.0.0.1:0", "--create", "--https-cert", pki.CertFile, "--https-key", pki.KeyFile, "--auth-token", "tls-token")
	addr := regexp.MustCompile(`https://127\.0\.0\.1:\d+/`).FindString(line)
	require.NotEmpty(t, addr, line)
	ca, err := os.ReadFile(pki.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(client.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodGet, addr+"?token=tls-token", nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	require.True(t, resp.Cookies()[0].Secure)
	code, _ := getWith(t, client, addr, map[string]string{"Authorization": "Bearer tls-token"})
	require.Equal(t, http.StatusOK, code)
}

// The README's flow: after a task was admitted, ui starts without
// --create; lease buckets nothing made yet are shown as absent, and the
// workers' claims bucket is among those shown.
func TestUIStartsInTheREADMEFlow(t *testing.T) {
	c, _ := newCLI(t)
	line := c.fail("ui", "--listen", "127.0.0.1:0")
	require.Contains(t, line, `ledger bucket "natscoord_ledger"`)
	require.Contains(t, line, "--create", "a fresh server: say what to run")
	require.Contains(t, line, "natscoord ledger admit")

	c.ok("ledger", "admit", "greet", "--seq", "1", "--kind", "echo")
	line = startUI(t, c.url, "--listen", "127.0.0.1:0")
	_, page := get(t, dashboardAddr(t, line))
	require.Contains(t, page, `data-count="pending">1<`)
	require.Contains(t, page, "<td><code>natscoord_leases</code></td><td colspan=\"5\" class=\"muted absent\">absent")
	require.Contains(t, page, "<code>natscoord_task_claims</code>")
}

// serve --ui names serve's own dashboard flags, not serve's NATS token.
func TestServeUINamesItsOwnAuthFlags(t *testing.T) {
	r := runCLI(t, "serve", "--port", "0", "--data-dir", t.TempDir(), "--ui", "--ui-listen", "0.0.0.0:0")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--ui-auth-token-file")
	require.Contains(t, r.stderr, "--ui-basic-auth-file")
	require.NotRegexp(t, `[^-]--auth-token\b`, r.stderr)
}

// Without auth, ui answers loopback Host names (and --allow-host ones)
// only: a DNS-rebound page of another site is refused.
func TestUIRefusesForeignHostWithoutAuth(t *testing.T) {
	c, _ := newCLI(t)
	addr := dashboardAddr(t, startUI(t, c.url, "--listen", "127.0.0.1:0", "--create", "--allow-host", "dash.internal"))
	for host, want := range map[string]int{"evil.example": http.StatusMisdirectedRequest, "dash.internal": http.StatusOK, "localhost": http.StatusOK,
		"localhost.evil.example": http.StatusMisdirectedRequest, "LOCALHOST:1": http.StatusOK} {
		for _, page := range []string{addr, addr + "metrics"} {
			req, err := http.NewRequest(http.MethodGet, page, nil)
			require.NoError(t, err)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, want, resp.StatusCode, host+" "+page)
		}
	}
}

// The dashboard's server bounds how long a client may hold a connection
// idle or while sending its request, and the size of its headers.
func TestUIServerHasLimits(t *testing.T) {
	srv := uiHTTPServer(http.NotFoundHandler())
	require.Positive(t, srv.ReadHeaderTimeout)
	require.Positive(t, srv.ReadTimeout)
	require.Positive(t, srv.IdleTimeout)
	require.Positive(t, srv.MaxHeaderBytes)
	require.Zero(t, srv.WriteTimeout, "a WriteTimeout would cut the event streams")
}
