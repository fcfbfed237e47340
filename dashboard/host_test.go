package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
)

// getHost fetches path with the given Host header.
func getHost(t *testing.T, e *dashtest.Env, host, path string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.Base+path, nil)
	require.NoError(t, err)
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.Server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// DNS rebinding: a page of evil.example whose name now resolves to
// 127.0.0.1 reaches the loopback dashboard, but its requests name
// evil.example in Host. Without a token or basic auth they are refused.
func TestHostCheckStopsDNSRebinding(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.j-1", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = g.Release(dashtest.HoldCtx) })
	port := e.Server.Listener.Addr().String()[strings.LastIndexByte(e.Server.Listener.Addr().String(), ':'):]

	code, body := getHost(t, e, "evil.example"+port, "/confirm?do=force-release&bucket=natscoord_leases&key=jobs.j-1", nil)
	require.Equal(t, http.StatusMisdirectedRequest, code)
	require.NotContains(t, body, `name="csrf"`)
	require.Contains(t, body, "loopback names")

	// The CSRF token as a same-host page would have it.
	confirm := e.Page(t, "/confirm?do=force-release&bucket=natscoord_leases&key=jobs.j-1")
	form := url.Values{"do": {"force-release"}, "bucket": {"natscoord_leases"}, "key": {"jobs.j-1"}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	req, err := http.NewRequest(http.MethodPost, e.Base+"/act", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Host = "evil.example" + port
	req.Header.Set("Origin", "http://evil.example"+port)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := e.Server.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	require.NoError(t, g.Context().Err(), "the lease is still held")

	for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "[::1]" + port, "LOCALHOST", "127.0.0.2"} {
		code, _ := getHost(t, e, host, "/", nil)
		require.Equal(t, http.StatusOK, code, host)
	}
}

func TestHostCheckAllowedHostsAndAuth(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.AllowedHosts = []string{"Dash.Internal"} })
	code, _ := getHost(t, e, "dash.internal:80", "/", nil)
	require.Equal(t, http.StatusOK, code)
	code, _ = getHost(t, e, "evil.example", "/", nil)
	require.Equal(t, http.StatusMisdirectedRequest, code)

	// With a token the token decides: any Host may present it.
	e = dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.Token = "s3cret-token" })
	code, _ = getHost(t, e, "dash.example.com", "/", map[string]string{"Authorization": "Bearer s3cret-token"})
	require.Equal(t, http.StatusOK, code)
	code, _ = getHost(t, e, "dash.example.com", "/", nil)
	require.Equal(t, http.StatusUnauthorized, code)
}

// Event streams are capped: one more is answered 503 at once.
func TestSSEStreamsAreCapped(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.MaxStreams = 2 })
	e.OpenSSE(t)
	e.OpenSSE(t)
	code, body := e.Get(t, "/sse")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "too many open event streams")
}
