package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
)

// The cookie ?token= sets proves the visit without holding the token.
func TestTokenCookieDoesNotHoldTheToken(t *testing.T) {
	const token = "s3cret-token-value"
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.Token = token })
	c := *e.Server.Client()
	c.Jar = newJar(t)
	resp, err := c.Get(e.Base + "/tasks?token=" + token)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	u, err := url.Parse(e.Base + "/")
	require.NoError(t, err)
	cookies := c.Jar.Cookies(u)
	require.Len(t, cookies, 1)
	require.NotContains(t, cookies[0].Value, token)
	require.NotContains(t, cookies[0].Value, url.QueryEscape(token))
	require.GreaterOrEqual(t, len(cookies[0].Value), 32)

	// The cookie opens pages; the raw token as a cookie does not.
	resp, err = c.Get(e.Base + "/coord")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, err := http.NewRequest(http.MethodGet, e.Base+"/coord", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: token})
	resp, err = e.Server.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// With both a token and basic auth set, a client with the token can use
// it as a Bearer header (which cannot travel with basic auth's header).
func TestBearerWorksWithTokenAndBasicAuth(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) {
		c.Token, c.BasicAuth = "tok-123456", dashboard.BasicAuth{User: "ops", Password: "pw"}
	})
	do := func(mod func(*http.Request)) int {
		req, err := http.NewRequest(http.MethodGet, e.Base+"/metrics", nil)
		require.NoError(t, err)
		mod(req)
		resp, err := e.Server.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, do(func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123456") }))
	require.Equal(t, http.StatusUnauthorized, do(func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") }))
	require.Equal(t, http.StatusUnauthorized, do(func(r *http.Request) {}))
	// Basic auth alone is not enough: a browser also needs the token's cookie.
	require.Equal(t, http.StatusUnauthorized, do(func(r *http.Request) { r.SetBasicAuth("ops", "pw") }))

	c := *e.Server.Client()
	c.Jar = newJar(t)
	req, err := http.NewRequest(http.MethodGet, e.Base+"/?token=tok-123456", nil)
	require.NoError(t, err)
	req.SetBasicAuth("ops", "pw")
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		r.SetBasicAuth("ops", "pw")
		return nil
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, strings.Contains(resp.Request.URL.RawQuery, "token"))
}
