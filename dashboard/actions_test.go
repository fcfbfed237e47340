package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// ledgerActions implements the dashboard's task actions with today's
// kvledger API, for tests: Cancel claims the task and fails it; Reopen
// is recorded only (a final record cannot be rebased yet).
type ledgerActions struct {
	l       *kvledger.Ledger
	mu      sync.Mutex
	reopens []kvledger.IdempotencyKey
}

func (a *ledgerActions) Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, _ uint64) error {
	f, err := a.l.Claim(ctx, actor, key, kvledger.OwnerID(actor), time.Minute, time.Now())
	if err != nil {
		return err
	}
	return a.l.Complete(ctx, actor, key, kvledger.OwnerID(actor), f, kvledger.StatusFailed, time.Now())
}

func (a *ledgerActions) Reopen(_ context.Context, _ kvledger.Actor, key kvledger.IdempotencyKey, _ uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reopens = append(a.reopens, key)
	return nil
}

func TestForceReleaseAction(t *testing.T) {
	e := dashtest.NewEnv(t, nil, nil)
	s := e.OpenSSE(t)
	g, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.j-1", 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g.StartRenewing(200*time.Millisecond))
	s.WaitFor(t, "event: coord", `"ref":"jobs.j-1"`, `"what":"acquired"`)

	body := e.Page(t, "/coord")
	require.Contains(t, body, `data-lease="jobs.j-1"`)
	require.Contains(t, body, `<td class="holder">holder-1</td>`)
	require.Contains(t, body, "Force release…")
	require.Regexp(t, `<td class="ttl" data-expires="\d+">`, body)
	require.Contains(t, body, `<td>`+itoa(g.Fence())+`</td>`, "the fence the holder acquired at")

	confirm := e.Page(t, "/confirm?do=force-release&bucket=natscoord_leases&key=jobs.j-1")
	require.Contains(t, confirm, "held by holder-1")
	csrf := dashtest.CSRFOf(t, confirm)
	form := url.Values{"do": {"force-release"}, "bucket": {"natscoord_leases"}, "key": {"jobs.j-1"}}

	resp := e.Post(t, form, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
	form.Set("csrf", csrf)
	resp = e.Post(t, form, map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "cross-origin")
	resp = e.Post(t, form, map[string]string{"Origin": "https://evil.example"})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "cross-origin by Origin")
	select {
	case <-g.Context().Done():
		t.Fatal("a refused request released the lease")
	default:
	}

	resp = e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/coord?done=")
	natstest.WaitClosed(t, g.Done(), 10*time.Second, "the holder learns it lost the lease")
	require.ErrorIs(t, context.Cause(g.Context()), kvlease.ErrLost)

	s.WaitAll(t, []string{"event: action", `"action":"force-release"`, `"result":"ok"`},
		[]string{"event: coord", `"ref":"jobs.j-1"`, `"what":"released"`})
	body = e.Page(t, "/coord")
	require.NotContains(t, body, `data-lease="jobs.j-1"`)
	require.Contains(t, body, "<b>force-release</b> <code>jobs.j-1</code> by natscoord-ui (was held by holder-1")
	require.Contains(t, body, "<b>released</b> lease <code>jobs.j-1</code>")

	resp = e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "failed", "releasing again reports that nothing was held")
}

func TestTaskActionsCancelAndReopen(t *testing.T) {
	acts := &ledgerActions{}
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		acts.l = e.Ledger
		dashtest.Admit(t, e.Ledger, "c1", nil)
		dashtest.Admit(t, e.Ledger, "c2", nil, "c1")
	}, func(c *dashboard.Config) { c.Tasks = acts })
	s := e.OpenSSE(t)

	body := e.Page(t, "/task?key=c1")
	require.Contains(t, body, "Cancel…")
	require.NotContains(t, body, "Reopen…", "a pending task cannot be reopened")
	confirm := e.Page(t, "/confirm?do=cancel&key=c1")
	require.Contains(t, confirm, "Cancel task c1")
	form := url.Values{"do": {"cancel"}, "key": {"c1"}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	resp := e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "/task?")
	require.Contains(t, resp.Header.Get("Location"), "key=c1")
	s.WaitAll(t, []string{"event: ledger", `"ref":"c2"`, `"status":"blocked"`},
		[]string{"event: action", `"action":"cancel"`, `"result":"ok"`})

	body = e.Page(t, "/task?key=c1")
	require.Contains(t, body, `data-field="status">failed<`)
	require.Contains(t, body, "<b>ui.cancel</b>", "the action is in the timeline")
	require.Contains(t, body, "by natscoord-ui")
	require.Less(t, strings.Index(body, "<b>ui.cancel</b>"), strings.LastIndex(body, "<b>ledger.completed</b>"))
	require.Contains(t, body, "Reopen…")

	confirm = e.Page(t, "/confirm?do=reopen&key=c1")
	form = url.Values{"do": {"reopen"}, "key": {"c1"}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	require.Equal(t, http.StatusSeeOther, e.Post(t, form, nil).StatusCode)
	acts.mu.Lock()
	require.Equal(t, []kvledger.IdempotencyKey{"c1"}, acts.reopens)
	acts.mu.Unlock()
	require.Contains(t, e.Page(t, "/task?key=c1"), "<b>ui.reopen</b>")
}

func TestTaskActionErrorIsShown(t *testing.T) {
	acts := &ledgerActions{}
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		acts.l = e.Ledger
		dashtest.Admit(t, e.Ledger, "d1", nil)
		dashtest.RunTask(t, e.Ledger, "d1", "w", kvledger.StatusCompleted)
	}, func(c *dashboard.Config) { c.Tasks = acts })
	confirm := e.Page(t, "/confirm?do=cancel&key=d1")
	form := url.Values{"do": {"cancel"}, "key": {"d1"}, "csrf": {dashtest.CSRFOf(t, confirm)}}
	resp := e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.Contains(t, loc, "failed")
	body := e.Page(t, strings.TrimPrefix(loc, ""))
	require.Contains(t, body, `class="flash bad"`)
	require.Contains(t, body, "record is not claimed")
	require.Contains(t, body, "<b>ui.cancel</b>", "a failed action is recorded too")
}

func TestNoTaskRuntimeOffersNoTaskActions(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.Admit(t, e.Ledger, "n1", nil) }, nil)
	body := e.Page(t, "/task?key=n1")
	require.NotContains(t, body, "Cancel…")
	require.Contains(t, body, "need a task runtime")
	code, _ := e.Get(t, "/confirm?do=cancel&key=n1")
	require.Equal(t, http.StatusForbidden, code)
}

func TestReadOnlyRemovesEveryAction(t *testing.T) {
	acts := &ledgerActions{}
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		acts.l = e.Ledger
		dashtest.Admit(t, e.Ledger, "r1", nil)
		_, ok, err := e.Leases.TryAcquireKey(dashtest.HoldCtx, "jobs.r", 10*time.Second)
		require.NoError(t, err)
		require.True(t, ok)
	}, func(c *dashboard.Config) { c.ReadOnly, c.Tasks = true, acts })
	require.Contains(t, e.Page(t, "/"), "read-only")
	require.NotContains(t, e.Page(t, "/coord"), "Force release")
	body := e.Page(t, "/task?key=r1")
	require.NotContains(t, body, "Cancel…")
	require.NotContains(t, body, "need a task runtime")
	for _, do := range []string{"force-release", "cancel", "reopen"} {
		code, _ := e.Get(t, "/confirm?do="+do+"&key=r1&bucket=natscoord_leases")
		require.Equal(t, http.StatusForbidden, code, do)
	}
	// Even with a valid-looking form, nothing happens.
	resp := e.Post(t, url.Values{"do": {"force-release"}, "bucket": {"natscoord_leases"}, "key": {"jobs.r"}}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, e.Page(t, "/coord"), `data-lease="jobs.r"`)
}

func TestTokenAuth(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.Token = "s3cret" })
	code, _ := e.Get(t, "/")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = e.Get(t, "/?token=wrong")
	require.Equal(t, http.StatusUnauthorized, code)

	req, _ := http.NewRequest(http.MethodGet, e.Base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := e.Server.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// ?token= sets a cookie and redirects to the page without the token.
	jar := newJar(t)
	c := *e.Server.Client()
	c.Jar = jar
	resp, err = c.Get(e.Base + "/tasks?token=s3cret")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "/tasks", resp.Request.URL.RequestURI())
	resp, err = c.Get(e.Base + "/coord")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestBasicAuth(t *testing.T) {
	acts := &ledgerActions{}
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		acts.l = e.Ledger
		dashtest.Admit(t, e.Ledger, "b1", nil)
	}, func(c *dashboard.Config) {
		c.BasicAuth, c.Tasks = dashboard.BasicAuth{User: "ops", Password: "pw"}, acts
	})
	code, _ := e.Get(t, "/")
	require.Equal(t, http.StatusUnauthorized, code)
	get := func(path, user, pass string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, e.Base+path, nil)
		req.SetBasicAuth(user, pass)
		resp, err := e.Server.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp, b.String()
	}
	resp, _ := get("/", "ops", "nope")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, confirm := get("/confirm?do=cancel&key=b1", "ops", "pw")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, _ := http.NewRequest(http.MethodPost, e.Base+"/act", strings.NewReader(url.Values{"do": {"cancel"}, "key": {"b1"}, "csrf": {dashtest.CSRFOf(t, confirm)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ops", "pw")
	resp2, err := e.Server.Client().Do(req)
	require.NoError(t, err)
	resp2.Body.Close()
	_, body := get("/task?key=b1", "ops", "pw")
	require.Contains(t, body, "by natscoord-ui:ops", "the actor names the user")
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func newJar(t testing.TB) http.CookieJar {
	t.Helper()
	j, err := cookiejar.New(nil)
	require.NoError(t, err)
	return j
}
