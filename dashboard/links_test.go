package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

var keyLink = regexp.MustCompile(`href="([^"]*[?&](?:amp;)?key=[^"]*)"`)

// linksTo returns the key parameter of every link in body whose path
// ends in path.
func linksTo(t *testing.T, body, path string) []string {
	t.Helper()
	var keys []string
	for _, m := range keyLink.FindAllStringSubmatch(body, -1) {
		u, err := url.Parse(html.UnescapeString(m[1]))
		require.NoError(t, err)
		if strings.HasSuffix(u.Path, path) {
			keys = append(keys, u.Query().Get("key"))
		}
	}
	return keys
}

// Every link that carries a key carries it escaped once: following it
// reaches that key, and the cancel it leads to cancels that task, not
// the one named by its escaped spelling.
func TestLinksCarryTheKeyEscapedOnce(t *testing.T) {
	acts := &ledgerActions{}
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		acts.l = e.Ledger
		dashtest.Admit(t, e.Ledger, "n:1", nil)
		dashtest.Admit(t, e.Ledger, "a:b", nil, "n:1")
		dashtest.Admit(t, e.Ledger, "a%3Ab", nil) // the key a double escape lands on
	}, func(c *dashboard.Config) { c.Tasks = acts })
	g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.x=y/z", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = g.Release(dashtest.HoldCtx) })

	require.Contains(t, linksTo(t, e.Page(t, "/tasks"), "/task"), "a:b")
	require.Contains(t, linksTo(t, e.Page(t, "/tasks"), "/graph"), "a:b")
	task := e.Page(t, "/task?key="+url.QueryEscape("a:b"))
	require.Equal(t, []string{"n:1"}, linksTo(t, task, "/task"), "the needs link")
	require.Equal(t, []string{"a:b"}, linksTo(t, task, "/graph"))
	require.ElementsMatch(t, []string{"a:b", "a:b", "n:1"}, linksTo(t, e.Page(t, "/graph?key="+url.QueryEscape("a:b")), "/task"),
		"the heading and the nodes of the graph")
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, body := e.Get(t, "/coord")
		return len(linksTo(t, body, "/confirm")) == 1
	}, "the lease's force-release link")
	require.Equal(t, []string{"jobs.x=y/z"}, linksTo(t, e.Page(t, "/coord"), "/confirm"))

	cancels := linksTo(t, task, "/confirm")
	require.Equal(t, []string{"a:b"}, cancels)
	confirm := e.Page(t, "/confirm?do=cancel&key="+url.QueryEscape(cancels[0]))
	require.Contains(t, confirm, "Cancel task a:b so")
	form := url.Values{"do": {"cancel"}, "key": {url.QueryEscape("a:b")}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	require.Contains(t, confirm, `name="key" value="`+form.Get("key")+`"`)
	require.Equal(t, http.StatusSeeOther, e.Post(t, form, nil).StatusCode)
	ctx := natstest.Context(t, 5*time.Second)
	s, _, err := e.Ledger.State(ctx, "a:b")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, s.Status, "the task the page showed was cancelled")
	s, _, err = e.Ledger.State(ctx, "a%3Ab")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, s.Status, "no other task was touched")
}
